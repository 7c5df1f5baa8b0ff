"""desk's own file formats, pure parse and render: a memory file, a MEMORY.md line, an archive line,
NOW.md and MISTAKES.md sections, the review queue and audit lines, preference and profile files,
hook and attribute files. Nothing here runs git or writes the desk."""
