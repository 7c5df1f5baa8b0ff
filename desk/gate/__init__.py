"""The gate: the validation rules and the verdict cache. The transaction runs it before publishing,
and the hooks run it on a person's commit; it reads formats, never operations."""
