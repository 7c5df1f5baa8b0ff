"""File formats of the conflict review: the queue (`.system/conflicts.json`) and the adjudication audit."""
