"""XML escaping for what recall and context inject into a prompt: pure functions.

Here, beside the token estimator, so the memory index can count a body's tokens as context will
inject it (`desk.memory.index.IndexEntry.injected_tokens`) without importing recall.
"""

from __future__ import annotations


def xml_attr(value: object) -> str:
    """A quoted XML attribute value: escaped, one line (booleans as true/false)."""
    text = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    return '"' + xml_text(text).replace('"', "&quot;").replace("\n", " ") + '"'


def xml_text(text: str) -> str:
    """XML text: `&`, `<`, `>` escaped and control characters (never valid XML) dropped, so
    recalled or injected memory text can never open or close an element."""
    text = "".join(ch for ch in text if ch in "\t\n" or ord(ch) >= 32)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def injected_body(body: str) -> str:
    """A memory's body as recall and context inject it: XML text, trailing newlines dropped."""
    return xml_text(body).rstrip("\n")
