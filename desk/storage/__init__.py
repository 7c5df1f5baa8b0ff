"""Storage: the only code that touches git, files on disk, locks and caches."""
