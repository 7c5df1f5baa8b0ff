"""The working notes: NOW.md and MISTAKES.md."""
