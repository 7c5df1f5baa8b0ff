"""The working notes' operations: NOW.md and MISTAKES.md (their formats are desk.formats')."""
