"""Long-term memory's operations: remember, forget, reindex, set, rename, edit and the reads (the
file format and MEMORY.md are desk.formats'; the write gate and the HEAD mirror desk.gate's)."""
