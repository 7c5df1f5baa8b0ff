"""User scopes (profile, preferences) and project scopes; docs/scopes.md."""
