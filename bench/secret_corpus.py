"""Seeded corpora for the secret scanner (bench/bench_secrets.py --corpus; the unit tests take a
small sample of the same shapes): clean text a scanner must pass, and secrets of every known shape,
each plain and in every disguise desk decodes or rejoins.

Secrets are generated from a seeded `random.Random` (never written here), so the corpus is the same
on every run and this file carries no token for another tool's scanner to find.
"""

from __future__ import annotations

import base64
import random
import string
import uuid
from collections.abc import Callable
from urllib.parse import quote

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
HEX = "0123456789abcdef"
WORDS = ["alpha", "billing", "report", "desk", "gateway", "search", "atlas", "nightly", "ops", "infra",
         "token", "secret", "keys", "cache", "config", "session", "auth", "password-reset"]


def _pick(rnd: random.Random, alphabet: str, n: int) -> str:
    return "".join(rnd.choice(alphabet) for _ in range(n))


def _jwt(rnd: random.Random) -> str:
    def part(data: str) -> str:
        return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")
    return ".".join([part('{"alg":"HS256","typ":"JWT"}'),
                     part('{"sub":"%d","name":"%s"}' % (rnd.randint(1, 10**9), rnd.choice(WORDS))),
                     _pick(rnd, URLSAFE, 43)])


def _pem(rnd: random.Random) -> str:
    body = "\n".join(_pick(rnd, B64, 64) for _ in range(6))
    return "-----BEGIN RSA PRIVATE KEY-----\n" + body + "\n-----END RSA PRIVATE KEY-----"


# shape -> (make a secret, the kind the scanner names, the text around it: {} is the secret)
SHAPES: dict[str, tuple[Callable[[random.Random], str], str, str]] = {
    "aws-access-key-id": (lambda r: "AKIA" + _pick(r, string.ascii_uppercase + "234567", 16),
                          "aws-access-key-id", "the key {} is live"),
    "github-token": (lambda r: "ghp_" + _pick(r, ALNUM, 36), "github-token", "export GH={} now"),
    "github-pat": (lambda r: "github_pat_" + _pick(r, ALNUM, 22) + "_" + _pick(r, ALNUM, 59), "github-pat",
                   "pat {} here"),
    "gitlab-token": (lambda r: "glpat-" + _pick(r, ALNUM, 20), "gitlab-token", "CI uses {} daily"),
    "slack-token": (lambda r: "xoxb-" + _pick(r, string.digits, 12) + "-" + _pick(r, string.digits, 13) + "-"
                    + _pick(r, ALNUM, 24), "slack-token", "bot {} posts"),
    "slack-app-token": (lambda r: "xapp-1-A" + _pick(r, string.ascii_uppercase + string.digits, 10) + "-"
                        + _pick(r, string.digits, 13) + "-" + _pick(r, HEX, 64), "slack-app-token", "app {} runs"),
    "slack-webhook": (lambda r: "https://hooks.slack.com/services/T" + _pick(r, ALNUM, 8) + "/B"
                      + _pick(r, ALNUM, 8) + "/" + _pick(r, ALNUM, 24), "slack-webhook", "post to {} please"),
    "anthropic-api-key": (lambda r: "sk-ant-api03-" + _pick(r, URLSAFE, 93) + "AA", "anthropic-api-key",
                          "claude {} works"),
    "openai-api-key": (lambda r: "sk-" + _pick(r, ALNUM, 48), "openai-api-key", "OPENAI {} set"),
    "openai-project-key": (lambda r: "sk-proj-" + _pick(r, URLSAFE, 64), "openai-api-key", "OPENAI {} set"),
    "google-api-key": (lambda r: "AIza" + _pick(r, URLSAFE, 35), "google-api-key", "maps {} here"),
    "stripe-live-key": (lambda r: "sk_live_" + _pick(r, ALNUM, 24), "stripe-live-key", "stripe {} live"),
    "huggingface-token": (lambda r: "hf_" + _pick(r, string.ascii_letters, 34), "huggingface-token",
                          "hub {} read"),
    "sendgrid-api-key": (lambda r: "SG." + _pick(r, URLSAFE, 22) + "." + _pick(r, URLSAFE, 43),
                         "sendgrid-api-key", "mail {} sends"),
    "twilio-api-key": (lambda r: "SK" + _pick(r, HEX, 32), "twilio-api-key", "sms {} sends"),
    "jwt": (_jwt, "jwt", "Authorization: Bearer {}"),
    "private-key": (_pem, "private-key", "key:\n{}\nend"),
    "generic-aws-secret": (lambda r: _pick(r, B64, 40), "generic-secret", "AWS_SECRET_ACCESS_KEY={}"),
    "generic-password": (lambda r: _pick(r, ALNUM + "!#&*", 16), "generic-secret", "db_password: '{}'"),
    "url-credentials": (lambda r: _pick(r, ALNUM, 16), "url-credentials", "postgres://admin:{}@db.example.org/prod"),
    "basic-auth": (lambda r: base64.b64encode(f"admin:{_pick(r, ALNUM, 16)}".encode()).decode(), "basic-auth",
                   "Authorization: Basic {}"),
}
# Shapes whose text is the secret's context (a key name, a scheme): a disguise applies to the whole line.
_IN_CONTEXT = {"generic-aws-secret", "generic-password", "url-credentials", "basic-auth", "private-key"}
SEPARATORS = {"\\n": "\n", "\\r\\n": "\r\n", "\\r": "\r", "U+2028": "\u2028", "U+2029": "\u2029", "NEL": "\x85",
              "\\v": "\x0b", "\\f": "\x0c"}


def _split(secret: str, sep: str, after: str) -> str:
    cut = len(secret) // 2
    return secret[:cut] + sep + secret[cut:] + after


# disguise -> how a line holding the secret is made from (the secret, the shape's own line)
DISGUISES: dict[str, Callable[[str, str], str]] = {
    "plain": lambda s, line: line.format(s),
    "after a letter": lambda s, line: f"see x{s} here",
    "after a digit": lambda s, line: f"see 7{s} here",
    "after _": lambda s, line: f"see _{s} here",
    "after %3D": lambda s, line: f"https://example.org/cb?token%3D{s}&x=1",
    "in double quotes": lambda s, line: f'key = "{s}"',
    "in single quotes": lambda s, line: f"key: '{s}'",
    "percent-encoded": lambda s, line: "q=" + quote(line.format(s), safe=""),
    "base64": lambda s, line: "blob " + base64.b64encode(line.format(s).encode()).decode() + " end",
    "base64url": lambda s, line: "blob " + base64.urlsafe_b64encode(line.format(s).encode()).decode() + " end",
    "full-width": lambda s, line: line.format("".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)),
    "zero-width inside": lambda s, line: line.format(s[:len(s) // 2] + "\u200b" + s[len(s) // 2:]),
    **{f"split by {name}, next line": (lambda sep: lambda s, line: "token " + _split(s, sep, sep + "next line"))(sep)
       for name, sep in SEPARATORS.items()},
    "split by \\n, words after": lambda s, line: "token " + _split(s, "\n", " is the key"),
    "split by \\n, indented": lambda s, line: "token:\n    " + _split(s, "\n    ", "\nnext line"),
}
# What a disguise of the whole line means for a shape in context: only these apply to it.
_CONTEXT_DISGUISES = {"plain", "percent-encoded", "base64", "base64url", "full-width"}


def true_positives(per_cell: int = 20, seed: int = 27) -> list[tuple[str, str, str, str]]:
    """(shape, disguise, text, expected kind) for every shape and every disguise that applies."""
    rnd = random.Random(seed)
    samples = []
    for shape, (make, kind, line) in SHAPES.items():
        for disguise, build in DISGUISES.items():
            if shape in _IN_CONTEXT and disguise not in _CONTEXT_DISGUISES:
                continue
            for _ in range(per_cell):
                samples.append((shape, disguise, build(make(rnd), line), kind))
    return samples


# -- clean text ------------------------------------------------------------------------------------

def _path(rnd: random.Random) -> str:
    words = [rnd.choice(WORDS) for _ in range(rnd.randint(2, 6))]
    style = rnd.randrange(5)
    if style == 0:
        return "/" + "/".join(words) + rnd.choice([".md", ".py", ".json", ".txt", ""])
    if style == 1:
        return "C:\\Users\\" + "\\".join(words) + ".docx"
    if style == 2:
        return ".".join(w.replace("-", "_") for w in words)
    if style == 3:
        return "src/main/java/" + "/".join(w.replace("-", "") for w in words[:-1]) + "/" + "".join(
            w.replace("-", "").capitalize() for w in words[-2:]) + "Controller.java"
    return "~/" + "/".join(words) + f"/v{rnd.randint(1, 9)}/{rnd.choice(WORDS)}_{rnd.randint(1, 99)}.yaml"


def _url(rnd: random.Random) -> str:
    query = "&".join(f"{rnd.choice(['q', 'page', 'sort', 'utm_source', 'lang', 'token_type', 'ref', 'id'])}="
                     f"{rnd.choice([rnd.choice(WORDS), str(rnd.randint(1, 500)), 'bearer', 'desc'])}"
                     for _ in range(rnd.randint(1, 5)))
    return f"https://{rnd.choice(WORDS)}.example.org/{rnd.choice(WORDS)}/{rnd.choice(WORDS)}?{query}"


CLEAN_TEMPLATES: dict[str, list[str]] = {
    "paths": ["Deploys read `{path}`.", "token_file = {path}", "secret_path: {path}",
              "The credentials live in {path} (never committed).", "api_key_file={path}",
              "private_key_path: {path}", "see {path} for the token rotation script"],
    "urls": ["Docs: {url}", "The callback is {url}", "token_url = {url}", "Read {url} before rotating the key."],
    "hashes": ["Release shipped; commit {sha}.", "SHA-256 of the tarball: {sha256}.", "checksum {sha256}",
               "git show {sha} lists the token rotation", "md5 {md5} matches", "image digest sha256:{sha256}",
               "fixed in {short} (see {sha})"],
    "uuids": ["Session id {uuid} belonged to the migration run.", "request_id={uuid}", "trace {uuid} failed",
              "the session token expired for {uuid}"],
    "base64 of text": ["payload {b64}", "data:text/plain;base64,{b64}", "encoded: {b64}"],
}


def clean_lines(kind: str, count: int, seed: int = 11) -> list[str]:
    """`count` clean lines of `kind` (a key of CLEAN_TEMPLATES), seeded."""
    rnd = random.Random(f"{seed}:{kind}")
    notes = ["The user prefers short answers in the morning.", "Deploys run nightly; the token budget is 4000.",
             "The password reset email goes out after 10 minutes.", "Ticket OPS-12: rotate the access key monthly.",
             "用户希望报告使用中文，密钥轮换每 30 天一次。", "secret_santa draw is on Friday."]
    lines = []
    for _ in range(count):
        sha = _pick(rnd, HEX, 40)
        lines.append(rnd.choice(CLEAN_TEMPLATES[kind]).format(
            path=_path(rnd), url=_url(rnd), sha=sha, short=sha[:12], sha256=_pick(rnd, HEX, 64),
            md5=_pick(rnd, HEX, 32), uuid=uuid.UUID(int=rnd.getrandbits(128)),
            b64=base64.b64encode(rnd.choice(notes).encode()).decode()))
    return lines
