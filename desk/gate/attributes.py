"""The `attribute` rule: no `.gitattributes` line may change how git stores, checks out or merges
desk's files.

desk compares its files byte for byte and relies on its own merge drivers; `* text eol=crlf`, a
foreign `merge=` or a `filter` would undo that. The gate asks git (`git check-attr`, never a copy
of its matching) what every desk file and the PROBES get, and refuses line-end conversion,
rewritten bytes (`filter`, `working-tree-encoding`, `ident`) and a merge driver other than `text`,
`binary` and desk's own for that path. It runs when a `.gitattributes` changes, in `validate
--all`/`doctor` when one holds a line not desk's own, and on what `desk clone` cloned."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from desk.errors import Finding
from desk.formats.hook_files import desk_attribute_lines, driver_for
from desk.gate.rules import is_managed
from desk.storage.git import Git, WorkTreeListing

if TYPE_CHECKING:
    from desk.layout import DeskFolder

ATTRIBUTES_FILE = ".gitattributes"
# Paths standing for files desk makes later, so that a line matching only those is found now.
PROBES = ("AGENTS.md", "SOUL.md", "USER.md", "NOW.md", "MEMORY.md", "MISTAKES.md", "PREFERENCES.md",
          ".system/desk.json", ".system/conflicts.json", ".system/archive/2000-01-01.000000000000.jsonl",
          ".system/adjudications.000000000000.jsonl", "memory/new.md", "journal/2000-01-01.md",
          "conversations/2000-01-01/new.md", "prefs/new.md", "users/u-0000000000000000/USER.md",
          "users/u-0000000000000000/PREFERENCES.md", "users/u-0000000000000000/prefs/new.md",
          "projects/new/MEMORY.md", "projects/new/memory/new.md")
_MERGE_BUILTIN = ("set", "unset", "text", "binary")
_GENERATED = ("index", "generated")  # desk's drivers of the files it regenerates after a merge
_HARMLESS = ("linguist-generated=true", "-diff")  # what desk's template adds to some merge lines
SHOWN = 5  # paths named in a finding; the rest are counted


def only_desk_lines(texts: Iterable[str]) -> bool:
    """Whether every line of these `.gitattributes` texts is a comment, blank, or desk's own."""
    own = set(desk_attribute_lines())
    return all(not words or words[0].startswith("#")
               or tuple(words[:2]) in own and all(w in _HARMLESS for w in words[2:])
               for text in texts for words in map(str.split, text.splitlines()))


def attribute_problems(path: str, attributes: Mapping[str, str]) -> list[str]:
    """The attributes (as a `.gitattributes` line spells them) that make git change `path`'s bytes
    or merge it other than desk means to; empty when none does."""
    found = []
    text, crlf, eol = attributes.get("text"), attributes.get("crlf"), attributes.get("eol")
    if text is not None and text != "unset":
        found.append("text" if text == "set" else f"text={text}")
    elif text is None and crlf is not None and crlf != "unset":
        found.append("crlf" if crlf == "set" else f"crlf={crlf}")
    if eol is not None and text != "unset" and crlf != "unset":
        found.append(f"eol={eol}")
    for name in ("filter", "working-tree-encoding"):
        value = attributes.get(name)
        if value is not None and value not in ("set", "unset"):
            found.append(f"{name}={value}")
    if attributes.get("ident") == "set":
        found.append("ident")
    merge, driver = attributes.get("merge"), driver_for(path)
    # git's union merge loses nothing in a generated index desk rebuilds after the merge (desk 0.1
    # wrote `MEMORY.md merge=union`); anywhere else it merges two sides silently.
    union = merge == "union" and driver in _GENERATED
    if merge is not None and merge not in _MERGE_BUILTIN and merge != f"desk-{driver}" and not union:
        found.append(f"merge={merge}")
    return found


def check_attributes(git: Git, paths: Iterable[str], *, cached: bool = True,
                     rewritten: set[str] | None = None) -> list[Finding]:
    """The `attribute` rule over desk's files among `paths` and the PROBES, from the index's
    `.gitattributes` (`cached`) or the work tree's; `rewritten` gathers the paths whose bytes git
    rewrites."""
    real = {p for p in paths if is_managed(p)}
    wanted = sorted(real | set(PROBES))
    by_problem: dict[tuple[str, ...], list[str]] = {}
    for path, attributes in git.worktree.attributes(wanted, cached=cached).items():
        refused = attribute_problems(path, attributes)
        if refused:
            by_problem.setdefault(tuple(refused), []).append(path)
            if rewritten is not None and any(not r.startswith("merge=") for r in refused):
                rewritten.add(path)
    findings = []
    for problems, hit in sorted(by_problem.items(), key=lambda item: sorted(item[1])[0]):
        hit.sort(key=lambda p: (p not in real, p))  # the real files first
        named = ", ".join(hit[:SHOWN]) + (f" and {len(hit) - SHOWN} more" if len(hit) > SHOWN else "")
        spelled = " ".join(f"`{p}`" for p in problems)
        findings.append(Finding(hit[0], 1, "attribute", (
            f".gitattributes gives {spelled} to {named}"
            + ("" if real.intersection(hit) else " (files desk would make there)")
            + ": git would " + _effect(problems) + "; remove that attribute from the .gitattributes "
            f"line that sets it (`git check-attr -a -- {hit[0]}` shows what applies)")))
    return findings


def _effect(problems: Iterable[str]) -> str:
    kinds = {p.split("=")[0] for p in problems}
    said = []
    if kinds & {"text", "crlf", "eol"}:
        said.append("change its line ends, which desk writes and compares byte for byte")
    if kinds & {"filter", "working-tree-encoding", "ident"}:
        said.append("rewrite its bytes between the repository and the work tree")
    if "merge" in kinds:
        said.append("merge it with a driver other than desk's (a two-sided edit could lose a side "
                    "instead of stopping as a conflict)")
    return " and ".join(said)


def tree_attribute_findings(git: Git, rev: str) -> list[Finding]:
    """The `attribute` rule over the tree of `rev` (never checked out: a temporary index holds it)."""
    with git.index.tree_index(rev) as at:
        return check_attributes(at, at.worktree.index_paths())


def work_tree_attribute_findings(desk: DeskFolder, listing: WorkTreeListing,
                                 findings: list[Finding]) -> list[Finding]:
    """`findings` with the `attribute` rule's added (git asked only when a `.gitattributes` line is not
    desk's own); other findings on a file git rewrites are left out: they describe bytes git would
    not commit."""
    from desk.errors import DeskError

    texts = []
    for path in listing.named(ATTRIBUTES_FILE):
        try:
            texts.append(desk.read_text(path, errors="replace"))
        except (OSError, DeskError):
            continue  # gone, or a link: the symlink rule says so
    if only_desk_lines(texts):
        return findings
    rewritten: set[str] = set()
    found = check_attributes(desk.git, [*listing.clean(), *listing.elsewhere], cached=False, rewritten=rewritten)
    return [f for f in findings if f.path not in rewritten] + found
