"""The append-only archive of raw events: store, import, verify, checkpoint, views (the line format
is desk.formats.archive)."""
