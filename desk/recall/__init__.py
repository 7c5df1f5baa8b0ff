"""The read side: recall (search, cache, records, rank, render), context and stats."""
