"""Doctor and the hook runner: they check and repair the whole desk, so they sit on top."""
