"""recall's records: the fast paths for terms and times give what the plain rules give."""

from __future__ import annotations

import datetime as dt
import re

import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from desk.recall.records import _timestamp, text_terms
from desk.text.normalize import normalize
from desk.text.times import TimeFormatError, parse_time
from desk.text.tokens import CJK_CLASS

_STEMMER = Stemmer.Stemmer("english")
_PLAIN = re.compile(rf"(?P<cjk>[{CJK_CLASS}]+)|(?P<word>[^\W_{CJK_CLASS}]+)")


def plain_terms(text: str) -> list[str]:
    """docs/recall.md's rule, match by match: words by their English Snowball stem, and each CJK run
    as its characters then its character bigrams."""
    terms: list[str] = []
    for match in _PLAIN.finditer(normalize(text)):
        run = match.group()
        if match.lastgroup == "word":
            terms.append(_STEMMER.stemWord(run))
        else:
            terms.extend(run)
            terms.extend(run[i:i + 2] for i in range(len(run) - 1))
    return terms


PIECES = ["SQLite", "wal_mode", "报告", "分层记忆", "ｆｕｌｌ", "カタカナ", "한국어", "x", "42", "é", "ß", "İ",
          " ", "\n", "\t", "-", "_", "。", "，", "'", "🎉", "\u00a0", "ﬁ", "①"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), max_size=20))
def test_text_terms_equal_the_plain_rule(parts: list[str]) -> None:
    text = "".join(parts)
    assert text_terms(text) == plain_terms(text)


def test_text_terms_examples() -> None:
    assert text_terms("用SQLite存储") == ["用", "sqlite", "存", "储", "存储"]
    assert text_terms("Orion's WAL_mode, port 5432") == ["orion", "s", "wal", "mode", "port", "5432"]
    assert text_terms("分层记忆 and more") == ["分", "层", "记", "忆", "分层", "层记", "记忆", "and", "more"]
    assert text_terms("Adopted, adopting, adopts") == ["adopt", "adopt", "adopt"]


@settings(max_examples=400, deadline=None)
@given(st.datetimes(min_value=dt.datetime(2, 1, 1), max_value=dt.datetime(9998, 12, 31, 23, 59, 59)), st.booleans())
def test_stored_times_give_the_same_timestamp_as_the_parser(moment: dt.datetime, micro: bool) -> None:
    stamp = (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}:"
             f"{moment.second:02d}" + (f".{moment.microsecond:06d}" if micro else "") + "Z")
    assert _timestamp(stamp) == parse_time(stamp).timestamp()


def test_unreadable_or_other_times() -> None:
    for value in ("2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z",
                  "2026-01-01T23:59:60Z", "0000-01-01T00:00:00Z", "2026-13-01T00:00:00Z", "soon", "", None, 5,
                  "0001-06-01T00:00:00Z", "9999-01-01T00:00:00Z"):  # outside the years desk accepts
        try:
            expected = parse_time(value).timestamp()  # type: ignore[arg-type]
        except (TimeFormatError, TypeError):
            expected = None
        assert _timestamp(value) == expected, value
    # other spellings the parser reads still count (an offset, a bare date)
    assert _timestamp("2026-11-29T12:00:00+02:00") == parse_time("2026-11-29T10:00:00Z").timestamp()
    assert _timestamp("2026-11-29") == parse_time("2026-11-29T00:00:00Z").timestamp()
