"""desk: an AI assistant's identity and memory as a git repository of plain Markdown files."""

__version__ = "0.1.0"
