"""Stage 5 of recall: docs/design.md §8.1's `<recalled_context>` XML, the human listing and snippets.
Everything is escaped; no hits render as ""; a stored direction control shows as `<U+202E>`
(raw, it would reorder what a person reads; --json keeps the exact text)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from desk.text.direction import visible
from desk.text.escape import one_line
from desk.text.escape import xml_attr as _xml_attr
from desk.text.escape import xml_text as _xml_text

if TYPE_CHECKING:
    from desk.recall.hits import RecallResult

SNIPPET_CHARS = 200


def xml_attr(value: object) -> str:
    return _xml_attr(visible(value) if isinstance(value, str) else value)


def xml_text(text: str) -> str:
    return _xml_text(visible(text))


def _line(text: str) -> str:
    """One line of the human listing: no line break, control character or raw direction control."""
    return visible(one_line(text))


def snippet(text: str, matched: Sequence[str], width: int = SNIPPET_CHARS) -> str:
    """About `width` characters of `text` around the first matched term, whitespace folded."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    folded = flat.casefold()
    found = [p for p in (folded.find(t) for t in matched) if p >= 0]
    start = max(0, min(found) - width // 4) if found else 0
    start = min(start, len(flat) - width)
    piece = flat[start:start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


def render_xml(result: RecallResult) -> str:
    """docs/design.md §8.1's `<recalled_context>`; empty string when there are no hits."""
    if not result.hits:
        return ""
    q = result.query
    lines = [f"<recalled_context query_id={xml_attr(q.query_id)} normalized_query={xml_attr(q.normalized_text)}"
             f" desk_id={xml_attr(result.hits[0].scope['desk_id'])}>"]
    for hit in result.hits:
        b = hit.score_breakdown
        lines.append(f"  <hit rank=\"{hit.rank}\" id={xml_attr(hit.id)} desk_id={xml_attr(hit.scope['desk_id'])}"
                     f" memory_kind={xml_attr(hit.scope['memory_kind'])} type={xml_attr(hit.scope['type'])}>")
        contrib = " ".join(f"{k}_contribution=\"{v:.6f}\"" for k, v in b.contributions.items())
        lines.append(f"    <score total=\"{b.total:.6f}\" lexical_coverage=\"{b.lexical_coverage:.6f}\""
                     f" recency=\"{b.recency:.6f}\" {contrib}"
                     f" matched_terms={xml_attr(' '.join(b.matched_terms))}/>")
        prov = " ".join(f"{k}={xml_attr(v)}" for k, v in hit.provenance.items() if k != "meta")
        meta = hit.provenance.get("meta") or {}
        if meta:
            lines.append(f"    <provenance {prov}>")
            lines += [f"      <meta key={xml_attr(k)} value={xml_attr(v)}/>" for k, v in sorted(meta.items())]
            lines.append("    </provenance>")
        else:
            lines.append(f"    <provenance {prov}/>")
        lines.append(f"    <snippet>{xml_text(hit.snippet)}</snippet>")
        lines.append("  </hit>")
    lines.append("</recalled_context>")
    return "\n".join(lines) + "\n"


def render_text(result: RecallResult) -> str:
    """Human output: one block per hit."""
    past = [result.past.describe()] if result.past is not None else []
    if not result.hits:
        return "\n".join([*past, f"no hits ({result.empty_reason}); searched {result.searched_records} records"])
    lines = past
    for hit in result.hits:
        where = hit.provenance.get("path") or f"{hit.provenance.get('file')}:{hit.provenance.get('line')}"
        # One line each, no control character: a stored record must not add lines or drive the terminal.
        score = f"score {hit.score_breakdown.total:.3f}"
        ended = f"  NO LONGER TRUE since {_line(hit.provenance['valid_to'])}" \
            if hit.provenance.get("no_longer_true") else ""
        lines.append(f"{hit.rank}. {_line(hit.id)}  {score}  ({_line(str(where))}){ended}")
        lines.append(f"   {_line(hit.snippet)}")
    lines.append(f"searched {result.searched_records} records, {result.candidate_records} candidates")
    return "\n".join(lines)
