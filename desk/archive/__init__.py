"""The append-only archive of raw events: format, store, import, verify, checkpoint, views."""
