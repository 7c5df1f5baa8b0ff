"""User scopes: the profile (`desk user`), preferences by key (`desk pref`) and their projection.

`files` holds the file formats and the projection (pure functions, beside the memory file format);
`profile` and `prefs` are the operations, each change one commit through desk.transaction.
docs/scopes.md describes the layout and the rules.
"""
