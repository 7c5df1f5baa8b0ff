"""Setting a desk up: `desk init`, installing hooks, merge drivers and attributes, `desk migrate`."""
