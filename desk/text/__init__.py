"""Text rules: normalisation, tokens, secrets, times, escaping. Pure functions."""
