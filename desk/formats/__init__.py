"""desk's own file formats, pure parse and render: a memory file, a MEMORY.md line, an archive line,
the review queue and audit lines, preference and profile files, hook and attribute files."""
