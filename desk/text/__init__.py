"""Text rules: normalisation, tokens, secrets and UTC times. Pure functions (and the one clock read)."""
