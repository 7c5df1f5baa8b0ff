"""Known secret patterns: find them (`scan`) and mask them (`redact`).

A finding is identified by the sha256 of the secret, so `.system/desk.json` can allow it without
storing it (deliberately no inline "allow" comment: an agent's text could carry one); nothing here
returns the whole secret. Patterns follow each vendor's public format (and gitleaks' rules).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
import unicodedata
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass

from desk.text.encodings import BASE64_RUN, percent_decoded

REDACTED = "[REDACTED:{kind}]"

# A known prefix needs nothing before it (`_ghp_...` is a token); only prefixes common enough to end
# another word (`sk-` in `task-`) must not follow their own body's characters (a look-behind after
# the prefix, so each pattern still starts with its literal). After a token: no more of its body.
_R = r"(?![A-Za-z0-9_\-])"
_R_ALNUM = r"(?![A-Za-z0-9])"

# (kind, the literals one of which every match holds, pattern). Where two match at the same
# place the first listed wins.
_PATTERNS: list[tuple[str, tuple[str, ...], str]] = [
    # Key blocks: the regex finds the header; `_block_end` extends the match to the block's end
    # with bounded `str.find`s (a lazy regex over the body is quadratic on repeated headers).
    ("private-key", ("PRIVATE KEY",), r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"),
    ("putty-private-key", ("PuTTY-User-Key-File-",), r"PuTTY-User-Key-File-\d+:"),
    ("aws-access-key-id", ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
     r"A(?<![A-Z0-9]A)(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z2-7]{16}" + _R_ALNUM),
    ("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{36,255}" + _R_ALNUM),
    ("github-pat", ("github_pat_",), r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}" + _R_ALNUM),
    ("gitlab-token", ("glpat-", "gldt-", "glptt-", "glrt-"), r"gl(?:pat|dt|ptt|rt)-[A-Za-z0-9_\-]{20,}" + _R),
    ("slack-token", ("xox",), r"xox[abpors]-[0-9]{6,}-[0-9A-Za-z\-]{8,}" + _R),
    ("slack-app-token", ("xapp-",), r"xapp-[0-9]-[A-Z0-9]{6,}-[0-9]{6,}-[A-Za-z0-9]{20,}" + _R_ALNUM),
    ("slack-webhook", ("hooks.slack.com",), r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/"
                                            r"[A-Za-z0-9_]{6,}/[A-Za-z0-9_]{6,}/[A-Za-z0-9_]{12,}"),
    ("anthropic-api-key", ("sk-ant-",), r"sk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_\-]{32,}" + _R),
    # Legacy keys are 48 mixed-case alphanumerics; project/service keys carry a prefix and may
    # hold '-' and '_'. Requiring a digit, an upper and a lower letter keeps "sk-some-long-phrase" out.
    ("openai-api-key", ("sk-",), r"sk-(?:(?:proj|svcacct|admin)-|(?<![A-Za-z0-9]sk-)(?!ant-))"
                                 r"(?=[A-Za-z0-9_\-]*[0-9])(?=[A-Za-z0-9_\-]*[A-Z])(?=[A-Za-z0-9_\-]*[a-z])"
                                 r"[A-Za-z0-9_\-]{32,}" + _R),
    ("google-api-key", ("AIza",), r"AIza[0-9A-Za-z_\-]{35}" + _R),
    ("stripe-live-key", ("_live_",), r"[sr]k_live_[0-9A-Za-z]{20,}" + _R_ALNUM),
    # Hugging Face: `hf_` and 34 letters of both cases (gitleaks' `huggingface-access-token`).
    ("huggingface-token", ("hf_",), r"hf_(?=[A-Za-z]*[A-Z])(?=[A-Za-z]*[a-z])[A-Za-z]{34}" + _R_ALNUM),
    ("sendgrid-api-key", ("SG.",), r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _R),
    # Twilio API key SIDs: `SK` and 32 lowercase hex digits.
    ("twilio-api-key", ("SK",), r"SK(?<![A-Za-z0-9]SK)[0-9a-f]{32}" + _R_ALNUM),
    # JSON Web Tokens: a base64url header and payload (both JSON objects, so `eyJ`) and a signature
    # (gitleaks' `jwt` rule).
    ("jwt", ("eyJ",), r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}={0,2}" + _R),
]
# A password in a URL's userinfo (detect-secrets' BasicAuthDetector), tried only on text holding `://` and `@`.
_URL_CREDENTIALS = (r"(?<=[A-Za-z0-9+.\-]://)[^\s/:@{}\[\]\"'<>]{0,64}:"
                    r"(?P<url_password>[^\s/@{}\[\]\"'<>]{3,128})(?=@[A-Za-z0-9.\-\[])")
# Substrings every specific match contains: most text holds none, and `in` is cheaper than a regex.
_LITERALS = tuple(literal for _, literals, _ in _PATTERNS for literal in literals)
_KEYWORD_HINTS = ("key", "secret", "token", "passw", "pwd", "credential")

# Generic assignments: a secret-sounding key, `=`/`:`/`=>`, then a value (quoted or bare).
_KEYWORD = (r"(?:api[_\-]?key|apikey|secret|token|passw(?:or)?d|pwd|access[_\-]?key|auth[_\-]?key"
            r"|private[_\-]?key|credentials?)")
# After a keyword: the rest of the key name, an optional quote, the assignment, the value (matched
# from each keyword found: scanning for the name's start backtracks quadratically on `a_a_a_...`).
_ASSIGNMENT = (r"[A-Za-z0-9_.\-]{0,40}[\"']?(?:[ \t]*(?P<op>:=|=>|==|=|:(?!:))[ \t]*|[ \t]+(?:is[ \t]+)?)"
               r"(?:(?P<q>[\"'`])(?P<qv>[^\"'`\s]{8,200})(?P=q)|(?P<bv>[^\s\"'`,;)\]}]{8,200}))")
# A value named in prose ("the password is <value>"): ASCII, letters and digits both, no
# brackets or ellipses (code and previews), so "secrets' BasicAuthDetector" is a word, not a key.
_PROSE_SECRET = re.compile(r"(?=[^0-9]*[0-9])(?=[^A-Za-z]*[A-Za-z])[!-~]+")
_PROSE_EXCLUDED = re.compile(r"[(){}\[\]<>]|\.\.\.")
_PASSWORD_WORDS = frozenset({"password", "passwd", "pass", "pwd", "secret", "token", "pw", "x", "xxx"})
# The next parameter of a query string (`&name=`), which ends a bare value.
_QUERY_NEXT = re.compile(r"&[A-Za-z_][A-Za-z0-9_.\-]*=")
# Values that are references or placeholders, not secrets.
_PLACEHOLDER = (r"(?i)^(?:\$|%|\{|<|\[|os\.|env\.|process\.|getenv|none$|null$|true$|false$)|\$\{|\{\{"
                r"|<[a-z_\-]+>|your[_\-]?|example|placeholder|changeme|redacted|dummy|sample|xxxx|\*\*\*|\.\.\.")


class _Patterns:
    """The compiled patterns, made on first use (`_patterns()`): most text needs none of them."""

    def __init__(self) -> None:
        # One regex per pattern: each starts with its literal, which the engine finds by a fast search.
        self.specific = [(kind, literals, re.compile(p)) for kind, literals, p in _PATTERNS]
        self.url_credentials = re.compile(_URL_CREDENTIALS)
        self.assignment = re.compile(_ASSIGNMENT)
        self.keyword = re.compile(_KEYWORD, re.IGNORECASE)
        self.placeholder = re.compile(_PLACEHOLDER)
        # A line break after a run of token characters holding a known prefix, before more of
        # them: a key broken over lines with words after its end (a view joins the two lines).
        run = "(?:" + "|".join(map(re.escape, _LITERALS)) + r")[A-Za-z0-9_.+/=\-]*"
        self.glued = re.compile(run + "(" + _BREAK + r"[ \t]*)(?=[A-Za-z0-9_\-])")
        self.glued_end = re.compile(run + r"\Z")  # a line `glued` joins to the one after it

    def placeholder_password(self, value: str) -> bool:
        """A URL password that only shows where one goes: `user:password@`, `:${PASS}@`, `:***@`."""
        return value.lower() in _PASSWORD_WORDS or bool(self.placeholder.search(value))


@functools.cache
def _patterns() -> _Patterns:
    return _Patterns()

GENERIC_MIN_ENTROPY = 3.0
GENERIC_MIN_LENGTH = 10
SHORTEST_SECRET = len("x://:pwd@h")  # a URL's password: the shortest text any pattern matches


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """One secret in a text: what kind, where, its fingerprint, and a masked preview."""

    kind: str
    line: int  # 1-based
    start: int  # offsets into the text
    end: int
    fingerprint: str  # sha256 hex of the secret
    preview: str  # never the whole secret

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "line": self.line, "fingerprint": self.fingerprint,
                "preview": self.preview}


def fingerprint(secret: str) -> str:
    import hashlib  # here: only a found secret pays for OpenSSL

    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def preview(secret: str) -> str:
    """A few leading characters and the length: enough to recognise, never enough to use."""
    shown = min(6, len(secret) // 4)
    return f"{secret[:shown]}…({len(secret)} chars)"


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    import math  # here: only a generic rule's candidate value pays
    from collections import Counter

    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in Counter(text).values()) if text else 0.0


def _looks_random(value: str) -> bool:
    if len(value) < GENERIC_MIN_LENGTH or _patterns().placeholder.search(value):
        return False
    classes = sum(bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]", r"[^A-Za-z0-9]"))
    if classes < 2 or value.isdigit():
        return False
    # Words joined by - or _ (github-token, report_style) are names, however varied their letters;
    # capitals joined by separators (PATH:LINE:, API_KEY_NAME) are placeholders or constants.
    if re.fullmatch(r"[a-z]+(?:[-_][a-z]+)*|[A-Z]+(?:[-_:./][A-Z]+)*:?", value):
        return False
    # Code: a call, an index or a literal (`estimate_tokens(data`, `frozenset({`, `text[start:end`).
    if re.match(r"[A-Za-z_][A-Za-z0-9_.]*[(\[{]", value):
        return False
    # A URL is an address (a password in it is the url-credentials rule's, a key in its query
    # string is found at its own name).
    if re.match(r"[A-Za-z][A-Za-z0-9+.\-]*://", value):
        return False
    # Dotted names and paths (settings.SECRET_KEY, ~/.ssh/id_rsa.pub) are references, unless they
    # switch case and between letters and digits as often as random text does.
    if re.fullmatch(_PATH, value) and not _irregular(value):
        return False
    return entropy(value) >= GENERIC_MIN_ENTROPY


_PART = r"\.?[A-Za-z0-9_\-]+"
_PATH = (r"(?:[A-Za-z]:|~|\.{1,2})?(?:[/\\]" + _PART + r"(?:[./\\]" + _PART + r")*|" + _PART
         + r"(?:[./\\]" + _PART + r")+)[/\\]?(?:\(\)|(?::[0-9]+)*:?)")  # a call, or `:line:col:`


def _irregular(value: str) -> bool:
    """Whether `value` turns lower to upper case, or between letter and digit, once in six characters
    (random text does every third or so, names a few times in all)."""
    turns = sum(1 for a, b in zip(value, value[1:])
                if (a.islower() and b.isupper()) or (a.isalpha() and b.isdigit())
                or (a.isdigit() and b.isalpha()))
    return turns >= max(3, len(value) // 6)


def scan(text: str, *, allow: Collection[str] = ()) -> list[SecretFinding]:
    """Every secret in `text`, in order, but those whose fingerprint is in `allow`; views of the text
    (`_views`: without invisible characters and NFKC-normalised, percent-decoded, with a wrapped
    key's lines joined) are scanned too, their findings mapped back to the text's characters."""
    literal = _has_literal(text)
    spans = _spans(text, generic=True, literal=literal)
    for view, origin, generic in _views(text, literal):
        for start, end, kind in _spans(view, generic=generic):
            first, last = origin(start), origin(end - 1) + 1
            inside = [s for s in spans if first <= s[0] and s[1] <= last]
            if inside and not _overlaps([s for s in spans if s not in inside], first, last):
                spans = [s for s in spans if s not in inside]  # the same key, found whole
            if not _overlaps(spans, first, last):
                spans.append((first, last, kind))
    findings = []
    for start, end, kind in sorted(spans):
        secret = text[start:end]
        digest = fingerprint(secret)
        if digest in allow:
            continue
        findings.append(SecretFinding(kind, text.count("\n", 0, start) + 1, start, end, digest,
                                      preview(secret)))
    return findings


def _has_literal(text: str) -> bool:
    return any(literal in text for literal in _LITERALS)


def _spans(text: str, *, generic: bool, literal: bool | None = None) -> list[tuple[int, int, str]]:
    spans = _plain_spans(text, generic=generic, literal=literal)
    _add_decoded(text, spans)
    return spans


def _specific(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int, str]]:
    """The vendor patterns' matches in `text[start:end]`, leftmost first, none overlapping."""
    end = len(text) if end is None else end
    found = []
    for index, (kind, literals, regex) in enumerate(_patterns().specific):
        if any(literal in text for literal in literals):
            found += [(m.start(), index, m.end(), kind) for m in regex.finditer(text, start, end)]
    spans: list[tuple[int, int, str]] = []
    for first, _, last, kind in sorted(found):
        if not spans or first >= spans[-1][1]:
            spans.append((first, _block_end(text, kind, last), kind))
    return spans


def _add_decoded(text: str, spans: list[tuple[int, int, str]]) -> None:
    """Secrets in a base64 run that decodes to text (the whole run is the finding), and the
    password of HTTP Basic credentials."""
    from desk.text.encodings import base64_texts

    for start, end, decoded in base64_texts(text):
        if not _overlaps(spans, start, end):
            inner = _plain_spans(decoded, generic=True) or _basic_spans(decoded)
            if inner:
                spans.append((start, end, inner[0][2]))
    spans += [span for span in _basic_spans(text) if not _overlaps(spans, span[0], span[1])]


def _basic_spans(text: str) -> list[tuple[int, int, str]]:
    from desk.text.encodings import basic_credentials

    return [(start, end, "basic-auth") for start, end, password in basic_credentials(text)
            if not _patterns().placeholder_password(password)]


def _plain_spans(text: str, *, generic: bool, literal: bool | None = None) -> list[tuple[int, int, str]]:
    """The patterns' matches in `text` as it is; `literal`: whether it holds one of _LITERALS,
    when the caller knows."""
    spans: list[tuple[int, int, str]] = []
    if _has_literal(text) if literal is None else literal:
        spans += _specific(text)
    if "://" in text and "@" in text:
        for match in _patterns().url_credentials.finditer(text):
            if not _patterns().placeholder_password(match.group("url_password")):
                if not _overlaps(spans, *match.span()):
                    spans.append((*match.span(), "url-credentials"))
    if not generic:
        return spans
    lower = text.lower()
    keywords = _patterns().keyword.finditer(text) if any(h in lower for h in _KEYWORD_HINTS) else ()
    for keyword in keywords:
        assignment = _patterns().assignment.match(text, keyword.end())
        if assignment is None:
            continue
        group = "qv" if assignment.group("qv") is not None else "bv"
        start, end = assignment.span(group)
        value = assignment.group(group)
        following = _QUERY_NEXT.search(value) if group == "bv" else None
        if following is not None:  # `token_type=bearer&page=2`: the value ends where a parameter starts
            value, end = value[:following.start()], start + following.start()
        if assignment.group("op") is None and (not _PROSE_SECRET.fullmatch(value)
                                               or _PROSE_EXCLUDED.search(value)):
            continue  # "password <value>" without `=` or `:`: only a value no word looks like
        if _looks_random(value) and not _overlaps(spans, start, end):
            spans.append((start, end, "generic-secret"))
    return spans


# Characters that render as nothing: a key with one inside looks whole to a reader.
_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
                        "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]")
# Every character that ends a line (str.splitlines' set): a key broken at any of them is rejoined.
_BREAK_CHARS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_BREAK = "(?:\r\n|[" + _BREAK_CHARS + "])"
# A line of key material alone (a key wrapped by an editor or a terminal), perhaps closed by a
# quote or punctuation: joined to the line before, and never ordinary text. A letter or a digit in
# it: a Markdown rule or a frontmatter fence (`---`) is no part of a key.
_KEY_ALONE = r"[+/=_.\-]*[A-Za-z0-9][A-Za-z0-9+/=_.\-]*[ \t]*[\"'`,;)\]}>]*[ \t]*"
_LINE_BREAK = re.compile(_BREAK + r"[ \t]*(?=" + _KEY_ALONE + "(?:" + _BREAK + "|$))")

Origin = Callable[[int], int]
# Full-width letters and digits: a value written in them after a plain key name (`password=Ｔｒ０...`);
# not full-width punctuation, which CJK text uses all the time.
_FULL_WIDTH = re.compile("[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a]")


def _views(text: str, literal: bool | None = None) -> Iterator[tuple[str, Origin, bool]]:
    """(view, map from a view offset to a text offset, whether generic rules apply) per view,
    each taken of the one before: without hidden characters and NFKC-normalised, percent-decoded,
    with the lines of a wrapped key joined."""
    view: str = text
    origin: Origin = lambda i: i
    invisible = not text.isascii() and _INVISIBLE.search(text)
    if invisible or (not text.isascii() and not unicodedata.is_normalized("NFKC", text)):
        # Mapped back only when the clean view shows a cue the text itself does not.
        clean = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))
        cues = _cues(clean)
        if cues and (invisible or cues - _cues(text) or _FULL_WIDTH.search(text)):
            view, origin = _mapped(text)
            yield view, origin, True
    decoded = percent_decoded(view)
    if decoded is not None:
        outer, inner = origin, decoded[1]
        view, origin = decoded[0], (lambda i: outer(inner(i)))
        yield view, origin, True
    if any(char in view for char in _BREAK_CHARS):
        joined, rejoined, points = view, origin, list[int]()
        alone = [m.span() for m in _LINE_BREAK.finditer(view)]  # the breaks before a line of key material alone
        if alone:
            joined, rejoined, points = _joined(view, alone, origin)
        if joined is not text or literal is None:  # joining adds no character, but can make one
            literal = _has_literal(joined)
        glued = _glued_breaks(joined) if literal else []
        if glued:
            joined, rejoined, more = _joined(joined, glued, rejoined)
            points = sorted(more + [_back(glued, p) for p in points])
        if joined is not view and (literal or _run_across(joined, points)):
            yield joined, rejoined, False


def _back(breaks: list[tuple[int, int]], point: int) -> int:
    """Where `point` of a view lands once `breaks` (none containing it) are removed."""
    return point - sum(end - start for start, end in breaks if end <= point)


def _run_across(joined: str, points: list[int]) -> bool:
    """Whether a base64 run of `joined` spans one of the `points` where lines were joined: a run
    the decoder would not have seen in the lines apart."""
    for run in BASE64_RUN.finditer(joined):
        i = bisect.bisect_right(points, run.start())
        if i < len(points) and points[i] < run.end():
            return True
    return False


def _glued_breaks(view: str) -> list[tuple[int, int]]:
    """The line breaks right after a run of token characters that holds a known prefix, before a
    line that starts with more of them: a key broken over lines with words after its end. Not
    after a run that is a whole key already (the next line's first word is not more of it)."""
    return [m.span(1) for m in _patterns().glued.finditer(view)
            if not any(end == m.start(1) for _, end, _ in _specific(view, m.start(), m.start(1)))]


def _joined(view: str, breaks: list[tuple[int, int]], outer: Origin) -> tuple[str, Origin, list[int]]:
    """`view` without `breaks`, the map from its offsets through `outer` to the text's, and the
    offsets where a break was taken out."""
    kept, pos = [], 0
    for start, end in breaks:
        kept.append((pos, start))
        pos = end
    kept.append((pos, len(view)))
    starts = list(itertools.accumulate((e - s for s, e in kept[:-1]), initial=0))

    def origin(i: int) -> int:
        part = bisect.bisect_right(starts, i) - 1
        return outer(kept[part][0] + i - starts[part])

    return "".join(view[s:e] for s, e in kept), origin, starts[1:]


# A line `_LINE_BREAK` joins to the one before it.
_KEY_LINE = re.compile(r"[ \t]*" + _KEY_ALONE)


def _plain_view(line: str) -> bool:
    """Whether `line`'s view (`_mapped`, character by character) is `line` itself: ASCII, or NFKC-normalised without
    hidden characters (a normalised text's characters are each normalised alone)."""
    return line.isascii() or (not _INVISIBLE.search(line) and unicodedata.is_normalized("NFKC", line))


def clean_lines(text: str) -> bool:
    """Whether every line of `text` holds no secret in any view `scan` takes of any text the line is
    part of: then `scan` of any text made of such lines finds nothing (the gate scans only the
    lines a commit splices into a clean MEMORY.md).

    A line can be judged alone: no pattern matches across a line break, look-arounds treat a break
    and the text's edge alike, and lines a view would join are refused here; each line is checked
    in every view, whether or not `scan` of this text would take it.
    """
    if any(char in text for char in _BREAK_CHARS[1:]):
        return False  # `_LINE_BREAK` joins at these too; a generated index never holds them
    lines = text.split("\n")
    if _joinable(lines) or scan(text):
        return False
    odd = [line for line in lines if not _plain_view(line)]
    if not odd:
        return True
    views = [_mapped(line)[0] for line in odd]  # character by character: a line's view is its part of the text's
    return not _joinable(views) and not scan("\n".join(views))


def _joinable(lines: list[str]) -> bool:
    """Whether a line, as it is or percent-decoded, is one a view joins to the line before
    (`_LINE_BREAK`) or after (`_Patterns.glued`)."""
    if any(map(_KEY_LINE.fullmatch, lines)):
        return True
    text = "\n".join(lines)
    if any(literal in text for literal in _LITERALS) and any(map(_patterns().glued_end.search, lines)):
        return True
    decoded = percent_decoded(text)
    return decoded is not None and _joinable(decoded[0].split("\n"))


@functools.cache
def scanner_version() -> str:
    """What `clean_lines` answers besides the text: this module's and its decoders' code and Python's
    Unicode tables (a record that a text is clean holds only under the same version)."""
    import zlib

    from desk.text import encodings

    code = b""
    for module in (__file__, encodings.__file__):
        with open(module, "rb") as source:
            code += source.read()
    return f"{unicodedata.unidata_version}:{len(code)}:{zlib.crc32(code):08x}"


def _cues(text: str) -> set[str]:
    """The literals and keyword hints `text` holds: what makes the patterns look closer."""
    lower = text.lower()
    return ({c for c in (*_LITERALS, "://") if c in text} | {h for h in (*_KEYWORD_HINTS, "basic") if h in lower})


def _mapped(text: str) -> tuple[str, Origin]:
    """`text` without hidden characters and NFKC-normalised character by character, and the map back."""
    chars: list[str] = []
    origins: list[int] = []
    for i, ch in enumerate(text):
        out = ch if ch.isascii() else "" if _INVISIBLE.fullmatch(ch) else unicodedata.normalize("NFKC", ch)
        chars.append(out)
        origins.extend([i] * len(out))
    return "".join(chars), origins.__getitem__


def redact(text: str) -> tuple[str, list[str]]:
    """`text` with every secret replaced by `[REDACTED:<kind>]`, and the kinds found (in order)."""
    findings = scan(text)
    if not findings:
        return text, []
    parts, pos = [], 0
    for finding in findings:
        parts += [text[pos:finding.start], REDACTED.format(kind=finding.kind)]
        pos = finding.end
    parts.append(text[pos:])
    return "".join(parts), [f.kind for f in findings]


BLOCK_LIMIT = 64 * 1024  # a key block longer than this is not searched for its end


def _block_end(text: str, kind: str, end: int) -> int:
    """Where a key block that starts with a matched header ends (the header's end if unclosed)."""
    if kind == "private-key":
        close = text.find("-----END", end, end + BLOCK_LIMIT)
        if close >= 0:
            match = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----").match(text, close)
            if match:
                return match.end()
    elif kind == "putty-private-key":
        for marker in ("\nPrivate-MAC:", "\nPrivate-Hash:"):
            close = text.find(marker, end, end + BLOCK_LIMIT)
            if close >= 0:
                line_end = text.find("\n", close + 1)
                return len(text) if line_end < 0 else line_end
        line_end = text.find("\n", end)
        return len(text) if line_end < 0 else line_end
    return end


def _overlaps(spans: list[tuple[int, int, str]], start: int, end: int) -> bool:
    return any(s < end and start < e for s, e, _ in spans)
