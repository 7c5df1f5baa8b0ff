"""The gate: validation rules, git hooks, and doctor."""
