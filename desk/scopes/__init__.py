"""User scopes: the profile (`desk user`), preferences by key (`desk pref`) and their projection.

The file formats and the projection (pure functions) are desk.formats.scope_files; `profile` and
`prefs` are the operations, each change one commit through desk.transaction.
docs/scopes.md describes the layout and the rules.
"""
