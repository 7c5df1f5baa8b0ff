"""The secret scanner: one secret per pattern is found, look-alikes pass, nothing prints a secret.

Secrets are built by concatenation so this repository never carries one literally (and so the
scanner of any other tool does not flag the test file itself).
"""

from __future__ import annotations

import base64
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desk.text.secrets import clean_lines, fingerprint, redact, scan, scanner_version

ALNUM = "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC"  # 32 mixed characters, high entropy


def _key(n: int, alphabet: str = ALNUM) -> str:
    return (alphabet * (n // len(alphabet) + 1))[:n]


# kind -> a line of text carrying exactly one secret (the second element is the secret itself).
SECRETS: dict[str, tuple[str, str]] = {}


def _add(kind: str, template: str, secret: str) -> None:
    SECRETS[kind] = (template.format(secret), secret)


_add("aws-access-key-id", "aws key {} in the config", "AKIA" + "IOSFODNN7EXAMPLQ")
_add("github-token", "export GH={}", "gh" + "p_" + _key(36))
_add("github-token-oauth", "token {}", "gh" + "o_" + _key(36))
_add("github-pat", "pat: {}", "github" + "_pat_" + _key(22) + "_" + _key(59))
_add("gitlab-token", "use {} for CI", "gl" + "pat-" + _key(20))
_add("slack-token", "bot {} posts", "xo" + "xb-" + "123456789012-1234567890123-" + _key(24))
_add("slack-webhook", "hook {}", "https://hooks." + "slack.com/services/" + "T0123ABCD/B0123ABCD/" + _key(24))
_add("openai-api-key", "OPENAI {}", "s" + "k-" + _key(48))
_add("openai-project-key", "OPENAI {}", "s" + "k-proj-" + _key(60, ALNUM + "_-"))
_add("anthropic-api-key", "claude {}", "s" + "k-ant-api03-" + _key(93) + "AA")
_add("google-api-key", "maps {} here", "AI" + "za" + _key(35))
_add("stripe-live-key", "stripe {}", "s" + "k_live_" + _key(24))
_add("stripe-restricted-key", "stripe {}", "r" + "k_live_" + _key(24))
_PEM_BODY = "\n".join(_key(64) for _ in range(4))
_add("private-key", "key:\n{}\nend", "-----BEGIN RSA " + "PRIVATE KEY-----\n" + _PEM_BODY
     + "\n-----END RSA PRIVATE KEY-----")
_add("openssh-private-key", "{}", "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + _PEM_BODY
     + "\n-----END OPENSSH PRIVATE KEY-----")
_add("putty-private-key", "{}\n", "PuTTY-User-" + "Key-File-3: ssh-ed25519\nEncryption: none\n"
     "Comment: me\nPublic-Lines: 2\n" + _key(64) + "\n" + _key(20) + "\nPrivate-Lines: 1\n"
     + _key(44) + "\nPrivate-MAC: " + "0123456789abcdef" * 4)
_add("generic-api-key", "api_key = \"{}\"", "Zx8" + "q2LmP0vR7tYw4nKs")
_add("generic-password", "db_password: '{}'", "Tr0ub4" + "dor&3xK!")
_add("generic-token-bare", "AUTH_TOKEN={}", "9f8e7d6c" + "5b4aZZyy3x2w")
_add("jwt", "Authorization: Bearer {}", "ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "ey"
     + "JzdWIiOiIxMjM0NTY3ODkwIn0." + _key(43))
_add("url-credentials", "DATABASE_URL=postgres://{}@db.example.org:5432/prod", "admin:" + "S3cr" + "etP4ss!")
_add("url-credentials-no-user", "cache at redis://{}@cache.internal", ":" + "qW9" + "xE4rT7y")
_add("generic-password-prose", "my password is {} for now", "Tr0ub4" + "dor&3xK!")
_add("generic-password-spaced", "wifi password {}", "kX9" + "vQ2mL7p")

_add("huggingface-token", "hub {} read", "h" + "f_" + _key(34, "aBcDeFgHiJkLmNoPqRsTuVwXyZ"))
_add("sendgrid-api-key", "mail {} sends", "S" + "G." + _key(22) + "." + _key(43))
_add("twilio-api-key", "sms {} sends", "S" + "K" + "0123456789abcdef" * 2)
_add("slack-app-token", "app {} runs", "xa" + "pp-1-A0123ABCDEF-1234567890123-" + "0123456789abcdef" * 4)
_add("basic-auth", "Authorization: Basic {}", base64.b64encode(b"admin:" + b"S3cr" + b"etP4ss!").decode())
_add("generic-aws-secret-path-like", "AWS_SECRET_ACCESS_KEY={}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLQKEY")

EXPECTED_KIND = {
    "github-token-oauth": "github-token", "openai-project-key": "openai-api-key",
    "stripe-restricted-key": "stripe-live-key", "openssh-private-key": "private-key",
    "generic-api-key": "generic-secret", "generic-password": "generic-secret",
    "generic-token-bare": "generic-secret", "url-credentials-no-user": "url-credentials",
    "generic-password-prose": "generic-secret", "generic-password-spaced": "generic-secret",
    "generic-aws-secret-path-like": "generic-secret",
}

LOOK_ALIKES = [
    "AKIA is the prefix AWS uses for access key ids",
    "AKIAIOSFODNN7EXAMPL",  # one character short
    "ghp_short",
    "gh" + "x_" + _key(36),  # not one of p/o/u/s/r
    "the task-management-system-design-document-for-everyone is long",
    "s" + "k-this-is-a-long-hyphenated-phrase-not-a-key",
    "s" + "k_test_" + _key(24),  # Stripe test keys are meant to be shared
    "-----BEGIN PUBLIC KEY-----\n" + _key(64) + "\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "xo" + "xb-your-token-here",
    "https://hooks." + "slack.com/services/",
    "AI" + "za" + "short",
    "api_key = os.environ[\"API_KEY\"]",
    "api_key: <YOUR_API_KEY>",
    "token = \"${GITHUB_TOKEN}\"",
    "password = \"changeme\"",
    "secret = \"your-secret-here\"",
    "max_tokens = 4096",
    "token_budget: 8000",
    "password = \"aaaaaaaaaaaaaaaa\"",
    "secret_key = settings.SECRET_KEY",
    "token: [REDACTED:github-token]",
    "The password policy requires twelve characters.",
    "reports: keep the token count low, written in 中文",
    "postgres://user:password@localhost/db",  # placeholders in URLs
    "redis://:${REDIS_PASSWORD}@cache",
    "https://user:***@example.org",
    "https://example.org/path?a=b@c",
    "git@github.com:org/repo.git",
    "ey" + "J is how base64 of a JSON object starts",
    "the token expired yesterday afternoon",
    "the secret ingredient is love",
    "password reset link sent",
    "secret: github-token (a finding's kind, not a value)",
    "the API key rotation runs every 90 days",
    # Issue 27.2: what the decoders and the wider patterns must still leave alone.
    "commit 3f5e0c1d2b4a69788f1e2d3c4b5a69788f1e2d3c and sha256 "
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "session 123e4567-e89b-12d3-a456-426614174000 ended",
    "payload " + base64.b64encode(b"the token budget is 4000 and the password reset link works").decode(),
    "token_file = /srv/app/config/token_cache.json",
    "secret_path: C:\\Users\\me\\keys\\notes.docx",
    "private_key_path: ~/.ssh/id_ed25519.pub",
    "https://example.org/search?q=desk&token_type=bearer&page=2&sort=desc",
    "token_url = https://auth.example.org/oauth/token?grant_type=client_credentials",
    "the task-" + _key(40).lower() + " id",  # sk- inside a word, no capitals
    "TASK" + "fedcba9876543210" * 2,  # SK inside a word
    "Basic usage: run desk init",
    "Authorization: Basic " + base64.b64encode(b"user:password").decode(),  # a placeholder
    "shelf_hf_is_not_a_token_but_a_name_ok",
    "validate_writes_and_more_identifiers_of_code_here",
    "%3D%3D%20plain%20words%20encoded",
    "第一行\u2028第二行",
    "commit 1a2b3c4d5e6f adds a secret: journal/2026-01-02.md:3: github-token (ghp_aB…(40 chars))",
    "a warning names the secret: PATH:LINE: KIND (preview)",
    "tests/guard/test_secrets_everywhere.py::test_the_commit_msg_hook_refuses_a_secret_anywhere",
    "---\nname: tone\n---\nshort answers\n---",
]

# Secrets a reader sees whole but a plain pattern would not: invisible characters inside,
# full-width forms, a key broken over lines. Each is found, and redaction removes all of it.
DISGUISED = {
    "zero-width": "key AKIA\u200bIOSFODNN7\u200dEXAMPLQ here",
    "soft-hyphen": "gh" + "p_" + _key(18) + "\u00ad" + _key(18),
    "full-width": "token " + "".join(chr(ord(c) + 0xFEE0) for c in "gh" + "p_" + _key(36)),
    "split-over-lines": "export GH=gh" + "p_" + _key(20) + "\n    " + _key(16) + "\nnext line",
    "split-crlf": "s" + "k-ant-api03-" + _key(50) + "\r\n" + _key(43) + "AA\r\nnext line",
}


@pytest.mark.parametrize("name", sorted(DISGUISED))
def test_disguised_secrets_are_found_and_redacted(name: str) -> None:
    text = DISGUISED[name]
    findings = scan(text)
    assert len(findings) == 1, (name, findings)
    redacted, kinds = redact(text)
    assert kinds and "[REDACTED:" in redacted
    for part in (_key(16), "IOSFODNN7", "EXAMPLQ"):
        assert part not in redacted or part not in text
    assert "next line" in redacted if "next line" in text else True


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_pattern_is_found_once(name: str) -> None:
    text, secret = SECRETS[name]
    findings = scan(text)
    assert [f.kind for f in findings] == [EXPECTED_KIND.get(name, name)]
    found = findings[0]
    assert text[found.start:found.end] == secret
    assert found.fingerprint == fingerprint(secret)
    assert found.line == text.count("\n", 0, found.start) + 1
    assert secret not in found.preview and secret not in str(found.to_json())


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_pass(text: str) -> None:
    assert scan(text) == []


def test_redact_replaces_every_secret_and_is_stable() -> None:
    corpus = "\n".join(text for text, _ in SECRETS.values()) + "\n" + "\n".join(LOOK_ALIKES)
    redacted, kinds = redact(corpus)
    assert len(kinds) == len(SECRETS)
    for _, secret in SECRETS.values():
        assert secret not in redacted
    assert "[REDACTED:github-token]" in redacted
    assert scan(redacted) == []  # redacted text carries nothing left to find
    assert redact(redacted) == (redacted, [])
    for text in LOOK_ALIKES:
        assert text in redacted  # look-alikes survive untouched


def test_allow_by_fingerprint_only() -> None:
    text, secret = SECRETS["github-token"]
    assert scan(text, allow={fingerprint(secret)}) == []
    other_text, _ = SECRETS["gitlab-token"]
    assert len(scan(text + "\n" + other_text, allow={fingerprint(secret)})) == 1
    # an inline marker is not an allowance
    assert len(scan(text + "  # desk: allow-secret")) == 1


def test_lines_are_counted_across_the_text() -> None:
    text = "first\nsecond\n" + SECRETS["google-api-key"][0]
    assert scan(text)[0].line == 3


_SHORT = st.text(alphabet="x:/@=pwdkeyAKIghp_ 9Z-.eyJsk", max_size=13)


@settings(max_examples=400, deadline=None)
@given(_SHORT)
def test_nothing_shorter_than_the_shortest_secret_is_ever_found(text: str) -> None:
    """SHORTEST_SECRET lets short ids skip the scan: it must be a true lower bound."""
    from desk.text.secrets import SHORTEST_SECRET

    assert [f.kind for f in scan("x://:k9Z@h")] == ["url-credentials"]  # exactly that long
    assert len("x://:k9Z@h") == SHORTEST_SECRET
    if len(text) < SHORTEST_SECRET:
        assert scan(text) == []


# -- clean_lines: a text whose lines are each clean scans clean, in any arrangement ----------------

_PIECES = ["- [", "](memory/", ".md) — ", "token", "=", ": ", "password is ", "secret ", "://", "@",
           "host", "user", "ghp_", "sk-", "AKIA", "eyJ", ".", "xox", "-", "_", " ", "\t", "报告，",
           "ｔｏｋｅｎ", "＝", "\u200b", "\u00ad", "-----BEGIN ", "PRIVATE KEY-----", "PuTTY-User-Key-File-2:",
           ALNUM[:8], ALNUM[8:16], ALNUM[16:24], ALNUM, "IOSFODNN7EXAMPLQ", "Ａ", "ｂ", "１",
           "%3D", "%2B", "hf_", "SG.", "SK", "Basic ", "\u2028", "\x85", "Z2hwX2FC", "M2RFNWdI", '"']
_LINE = st.lists(st.sampled_from(_PIECES), max_size=8).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=6))
def test_clean_lines_is_a_property_of_each_line(lines: list[str]) -> None:
    """`clean_lines` of a text is the conjunction over its lines, and a text of clean lines,
    however they are arranged, holds no secret: what lets MEMORY.md scan only a spliced line."""
    text = "\n".join(lines)
    each = [clean_lines(line) for line in lines]
    assert clean_lines(text) == all(each)
    if all(each):
        assert scan(text) == []
        assert scan("\n".join(reversed(lines))) == []


def test_clean_lines_refuses_what_a_view_would_join_or_reveal() -> None:
    key = "gh" + "p_" + _key(36)
    assert not clean_lines(f"- [a](memory/a.md) — {key}")
    # Split over two lines: the second is key material alone, which scan joins to the first.
    assert not clean_lines(key[:20])
    assert not clean_lines(f"- [a](memory/a.md) — x\n{key[20:]}")
    # Hidden in the hidden-character view only.
    assert not clean_lines(f"- [a](memory/a.md) — {key[:10]}\u200b{key[10:]}")
    assert not clean_lines("ＡＢＣ")  # key material once NFKC-normalised
    assert not clean_lines("a\rb")
    assert clean_lines("- [report-style](memory/report-style.md) — 报告的语言和长度，用户纠正")
    assert clean_lines("")


def test_scanner_version_names_the_unicode_tables_and_the_code() -> None:
    import unicodedata

    version = scanner_version()
    assert version.startswith(unicodedata.unidata_version + ":") and version == scanner_version()


# -- issue 27.2: every shape in every disguise (a small sample of bench/secret_corpus.py) ---------

def _corpus() -> ModuleType:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "bench" / "secret_corpus.py"
    spec = importlib.util.spec_from_file_location("secret_corpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("secret_corpus", module)
    spec.loader.exec_module(module)
    return module


CORPUS = _corpus()
# Short prefixes that end other words (`sk-` in task-, `SK` in TASK, AKIA in a run of capitals and
# digits) still need a boundary before them: glued to a letter or a digit they are not found.
_BOUNDED = {("openai-api-key", "after a letter"), ("openai-api-key", "after a digit"),
            ("twilio-api-key", "after a letter"), ("twilio-api-key", "after a digit"),
            ("aws-access-key-id", "after a digit")}
TRUE_POSITIVES = [s for s in CORPUS.true_positives(per_cell=2, seed=5) if (s[0], s[1]) not in _BOUNDED]


@pytest.mark.parametrize(("shape", "disguise", "text", "kind"), TRUE_POSITIVES,
                         ids=[f"{s}/{d}/{i % 2}" for i, (s, d, _, _) in enumerate(TRUE_POSITIVES)])
def test_every_shape_is_found_in_every_disguise_and_redacted(shape: str, disguise: str, text: str,
                                                             kind: str) -> None:
    findings = scan(text)
    assert kind in [f.kind for f in findings], (shape, disguise, text, findings)
    redacted, kinds = redact(text)
    assert kind in kinds and scan(redacted) == []
    for f in findings:
        assert text[f.start:f.end] not in f.preview and f.fingerprint == fingerprint(text[f.start:f.end])


@pytest.mark.parametrize("kind", sorted(CORPUS.CLEAN_TEMPLATES))
def test_the_clean_corpus_scans_clean(kind: str) -> None:
    """Paths (also as a `token_file =` value), URLs with query strings, commit ids and digests,
    UUIDs, base64 of ordinary text: no finding (bench/bench_secrets.py --corpus runs 2,000 each)."""
    assert [(line, f.kind) for line in CORPUS.clean_lines(kind, 300, seed=3) for f in scan(line)] == []


def test_a_random_secret_is_never_taken_for_a_path() -> None:
    """A base64 secret's `/`-separated parts can each start with a letter: it was taken for a path
    in 787 of 5,000 random 40-character AWS secret keys."""
    rnd = random.Random(27)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    values = ["".join(rnd.choice(alphabet) for _ in range(40)) for _ in range(500)]
    assert [v for v in values if not scan(f"AWS_SECRET_ACCESS_KEY={v}")] == []


def test_glued_short_prefixes_stay_bounded_but_the_percent_view_frees_them() -> None:
    key = "s" + "k-" + _key(48)
    assert scan("task" + key[2:]) == [] and scan("x" + key) == []
    assert [f.kind for f in scan("q=x%3D" + key)] == ["openai-api-key"]
    assert [f.kind for f in scan("_" + key)] == ["openai-api-key"]


def test_a_finding_in_a_decoded_form_is_the_characters_that_carry_it() -> None:
    token = "gh" + "p_" + _key(36)
    encoded = base64.b64encode(f"token {token}".encode()).decode()
    text = f"blob {encoded} end"
    (found,) = scan(text)
    assert text[found.start:found.end] == encoded and found.kind == "github-token"
    assert scan(text, allow={fingerprint(encoded)}) == []  # allowed by that fingerprint
    (found,) = scan(f"cb?token%3D{token}&x=1")
    assert found.kind == "github-token" and found.preview.startswith("ghp_")
