"""desk.text.times: the one parser and the one formatter of UTC times, fed hostile input."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desk.errors import UsageError
from desk.text.times import TimeFormatError, format_time, parse_time

UTC = dt.timezone.utc
TEN = dt.datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize("text", [
    "2026-11-29T10:00:00Z",
    "2026-11-29T10:00Z",                  # seconds are optional
    "2026-11-29t10:00:00z",               # RFC 3339 allows lowercase T and Z
    "2026-11-29 10:00:00Z",               # and a space instead of T
    "2026-11-29T12:00:00+02:00",
    "2026-11-29T12:00:00+0200",           # `date +%z` spells offsets without the colon
    "2026-11-29T12:00+02",
    "2026-11-29T04:30:00-05:30",
    "2026-11-29T10:00:00-00:00",
    "  2026-11-29T10:00:00Z\r\n",         # a line pasted from a CRLF file
    "\u30002026-11-29T10:00:00Z\u00a0",   # Unicode spaces around it, too
])
def test_spellings_of_one_instant(text: str) -> None:
    moment = parse_time(text)
    assert moment == TEN and moment.tzinfo is UTC


def test_a_bare_date_is_midnight_utc() -> None:
    midnight = dt.datetime(2026, 11, 29, tzinfo=UTC)
    assert parse_time("2026-11-29") == midnight
    assert parse_time("2026-11-29", form="day") == midnight
    assert parse_time(dt.date(2026, 11, 29)) == midnight  # YAML's date


@pytest.mark.parametrize("text, micro", [
    ("2026-11-29T10:00:00.5Z", 500000),
    ("2026-11-29T10:00:00,5Z", 500000),
    ("2026-11-29T10:00:00.000001Z", 1),
    ("2026-11-29T10:00:00.123456789Z", 123456),  # past microseconds: dropped, never rounded up
])
def test_fractional_seconds(text: str, micro: int) -> None:
    assert parse_time(text) == TEN.replace(microsecond=micro)


@pytest.mark.parametrize("text, reason", [
    ("2026-11-29T10:00:00", "no timezone"),
    ("2026-11-29 10:00", "no timezone"),          # `desk archive append --at` refuses it
    ("2026-11-29T10:00:00.5", "no timezone"),
    ("2026-11-29\u200bT10:00:00Z", "not an ISO 8601 time"),   # zero-width space inside
    ("2026-11-29T10:00:00Z\u200b", "not an ISO 8601 time"),   # ... or after
    ("\ufeff2026-11-29T10:00:00Z", "not an ISO 8601 time"),   # a BOM is not whitespace
    ("2026-11-29\u200b10:00Z", "not an ISO 8601 time"),      # Python's fromisoformat takes any separator
    ("２０２６-11-29", "not an ISO 8601 time"),                 # fullwidth digits
    ("٢٠٢٦-١١-٢٩", "not an ISO 8601 time"),                   # Arabic-Indic digits
    ("99999-01-01T00:00:00Z", "not an ISO 8601 time"),        # five-digit year
    ("+2026-11-29T10:00:00Z", "not an ISO 8601 time"),
    ("10000-01-01", "not an ISO 8601 time"),
    ("0000-01-01T00:00:00Z", "not a real time"),
    ("2026-13-01T00:00:00Z", "not a real time"),
    ("2026-02-30", "not a real time"),
    ("2026-11-29T24:00:00Z", "not a real time"),
    ("2026-11-29T10:00:60Z", "not a real time"),              # no leap seconds
    ("2026-11-29T10:00:00+24:00", "not a real time"),
    ("2026-11-29T10:00:00+02:60", "not a real time"),
    ("9999-12-31T23:00:00-05:00", "outside the range"),
    ("0001-01-01T00:00:00+05:00", "outside the range"),
    ("9999-12-31T23:59:59Z", "outside the range"),  # its next day overflows: `digest --as-of` did
    ("0001-06-01T00:00:00Z", "outside the range"),
    ("2026-11-29T10Z", "not an ISO 8601 time"),               # hours alone
    ("20261129T100000Z", "not an ISO 8601 time"),             # ISO 8601's basic format
    ("2026-W48-7", "not an ISO 8601 time"),                   # week dates
    ("2026-11-29T10:00:00+02:00:30", "not an ISO 8601 time"),  # offsets in seconds
    ("2026-11-29Z", "not an ISO 8601 time"),
    ("", "not an ISO 8601 time"),
    ("now", "not an ISO 8601 time"),
])
def test_refused_inputs_say_why(text: str, reason: str) -> None:
    with pytest.raises(TimeFormatError, match=reason) as info:
        parse_time(text, "--at")
    assert info.value.message.startswith("--at: ") and not info.value.reason.startswith("--at")
    assert isinstance(info.value, UsageError) and info.value.exit_code == 2


@pytest.mark.parametrize("value", [123, None, 1.5, ["2026-11-29"], b"2026-11-29"])
def test_a_non_time_value_is_refused(value: object) -> None:
    with pytest.raises(TimeFormatError, match="is not an ISO 8601 time"):
        parse_time(value)  # type: ignore[arg-type]


def test_datetimes_must_carry_a_zone() -> None:
    with pytest.raises(TimeFormatError, match="no timezone"):
        parse_time(dt.datetime(2026, 11, 29, 10))
    plus_two = dt.timezone(dt.timedelta(hours=2))
    assert parse_time(dt.datetime(2026, 11, 29, 12, tzinfo=plus_two)) == TEN
    with pytest.raises(TimeFormatError, match="outside the range"):
        parse_time(dt.datetime(1, 1, 1, tzinfo=plus_two))


@pytest.mark.parametrize("text", ["2026-11-29T00:00:00Z", "2026-11-29t00:00z", "20261129", "2026-W48-7"])
def test_the_day_form_takes_a_bare_date_only(text: str) -> None:
    assert parse_time(" 2026-11-29\n", form="day") == dt.datetime(2026, 11, 29, tzinfo=UTC)
    with pytest.raises(TimeFormatError, match="not a day like 2026-11-29"):
        parse_time(text, "--date", form="day")


@pytest.mark.parametrize("text", ["2026-11-29T10:00:00Z", "2026-11-29T10:00:00.000000Z"])
def test_the_stored_form_takes_what_format_time_writes(text: str) -> None:
    assert parse_time(text, form="stored") == TEN


@pytest.mark.parametrize("text", [
    "2026-11-29T10:00:00z", "2026-11-29T10:00Z", "2026-11-29 10:00:00Z", "2026-11-29T10:00:00.000Z",
    "2026-11-29T10:00:00+00:00", "2026-11-29", " 2026-11-29T10:00:00Z", "2026-11-29T10:00:00Z\n",
    "2026-11-29T10:00:00Z\r",
])
def test_the_stored_form_refuses_every_other_spelling(text: str) -> None:
    with pytest.raises(TimeFormatError, match="YYYY-MM-DDTHH:MM:SS"):
        parse_time(text, form="stored")


def test_format_time_units() -> None:
    moment = dt.datetime(2026, 11, 29, 12, 0, 5, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert format_time(moment) == "2026-11-29T10:00:05Z"
    assert format_time(moment, "microsecond") == "2026-11-29T10:00:05.123456Z"
    assert format_time(moment, "day") == "2026-11-29"
    assert format_time(dt.datetime(2026, 11, 30, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=1))),
                       "day") == "2026-11-29"  # the UTC day, not the local one


def test_format_time_pads_small_years() -> None:
    """strftime's %Y writes year 999 as `999`, which no parser reads back."""
    old = dt.datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert format_time(old) == "0999-01-02T03:04:05Z"
    assert parse_time(format_time(old)) == old


def test_format_time_refuses_naive_datetimes() -> None:
    with pytest.raises(ValueError, match="no timezone"):
        format_time(dt.datetime(2026, 11, 29, 10))


_offsets = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))
_moments = st.datetimes(min_value=dt.datetime(2, 1, 2), max_value=dt.datetime(9998, 12, 30),
                        timezones=_offsets)


@settings(max_examples=300, deadline=None)
@given(_moments)
def test_round_trip(moment: dt.datetime) -> None:
    stored = format_time(moment, "microsecond")
    assert parse_time(stored, form="stored") == moment
    assert parse_time(stored) == moment
    assert format_time(parse_time(stored), "microsecond") == stored
    seconds = format_time(moment)
    assert parse_time(seconds, form="stored") == moment.replace(microsecond=0)
    assert format_time(moment, "day") == seconds[:10]


@settings(max_examples=300, deadline=None)
@given(_moments)
def test_any_offset_spelling_reads_as_the_same_instant(moment: dt.datetime) -> None:
    offset = moment.utcoffset()
    assert offset is not None
    sign = "-" if offset < dt.timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    local = f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}.{moment.microsecond:06d}"
    assert parse_time(f"{local}{sign}{minutes // 60:02d}:{minutes % 60:02d}") == moment
    assert parse_time(f"{local}{sign}{minutes // 60:02d}{minutes % 60:02d}") == moment
