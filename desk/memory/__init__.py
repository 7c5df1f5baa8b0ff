"""Long-term memory: the file format, MEMORY.md, the HEAD mirror, the write gate, the operations."""
