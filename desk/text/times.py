"""UTC times: the one parser and the one formatter for every time desk reads or writes.

`format_time` writes `YYYY-MM-DDTHH:MM:SSZ` (with `.ffffff` in the archive). `parse_time` reads
`input` (a date, or a time with a zone: desk never guesses the local clock), `day`, or `stored`
(exactly what `format_time` writes). ASCII digits only; UTC years 2-9998, so no window overflows.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal

from desk.errors import UsageError

Form = Literal["input", "day", "stored"]
Unit = Literal["day", "second", "microsecond"]

_DATE = r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})"
_SOURCES = {
    "input": _DATE + r"(?:[Tt ](?P<hour>[0-9]{2}):(?P<minute>[0-9]{2})"
                     r"(?::(?P<second>[0-9]{2})(?:[.,](?P<fraction>[0-9]+))?)?"
                     r"(?:(?P<z>[Zz])|(?P<sign>[+-])(?P<off_h>[0-9]{2})(?::?(?P<off_m>[0-9]{2}))?)?)?",
    "day": _DATE,
    "stored": _DATE + r"T(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
                      r"(?:\.(?P<fraction>[0-9]{6}))?(?P<z>Z)",
}
_SHAPES = {
    "input": "an ISO 8601 time (e.g. 2026-11-29T10:00:00Z, or 2026-11-29 for midnight UTC)",
    "day": "a day like 2026-11-29",
    "stored": "a UTC time YYYY-MM-DDTHH:MM:SS[.ffffff]Z",
}
_UTC = dt.timezone.utc


class TimeFormatError(UsageError):
    """A time desk cannot read (exit 2). `reason` is the message without the name of the field."""

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(f"{what}: {reason}")
        self.reason = reason


def utc_now() -> dt.datetime:
    """The current time in UTC: the default of every `now` parameter (tests pass their own)."""
    return dt.datetime.now(_UTC)


def parse_time(value: str | dt.date, what: str = "time", *, form: Form = "input") -> dt.datetime:
    """`value` (a string in `form`, a date: its midnight, an aware datetime; never a naive one) in UTC;
    TimeFormatError (a UsageError) names `what` otherwise."""
    if isinstance(value, dt.datetime):
        if value.utcoffset() is None:
            raise TimeFormatError(what, f"{value} has no timezone; give UTC (…Z) or an offset")
        return _in_utc(value, what, str(value))
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=_UTC)
    if not isinstance(value, str):
        raise TimeFormatError(what, f"{value!r} is not {_SHAPES[form]}")
    match = re.compile(_SOURCES[form]).fullmatch(value if form == "stored" else value.strip())
    if match is None:
        raise TimeFormatError(what, f"{value!r} is not {_SHAPES[form]}")
    part = match.groupdict()
    if part.get("hour") is not None and not part["z"] and not part["sign"]:
        raise TimeFormatError(what, f"{value!r} has no timezone; add Z for UTC or an offset like +02:00")
    try:
        zone = _UTC
        if part.get("sign"):
            minutes = int(part["off_m"] or 0)
            if minutes > 59:
                raise ValueError(f"offset minutes {minutes} are over 59")
            offset = dt.timedelta(hours=int(part["off_h"]), minutes=minutes)
            zone = dt.timezone(-offset if part["sign"] == "-" else offset)
        fraction = (part.get("fraction") or "")[:6].ljust(6, "0")
        moment = dt.datetime(int(part["year"]), int(part["month"]), int(part["day"]),
                             int(part.get("hour") or 0), int(part.get("minute") or 0),
                             int(part.get("second") or 0), int(fraction), tzinfo=zone)
    except ValueError as exc:
        raise TimeFormatError(what, f"{value!r} is not a real time ({exc})") from None
    return _in_utc(moment, what, repr(value))


FIRST_YEAR, LAST_YEAR = 2, 9998  # the UTC years desk accepts (see the module docstring)


def _in_utc(moment: dt.datetime, what: str, shown: str) -> dt.datetime:
    try:
        utc = moment.astimezone(_UTC)
    except OverflowError:
        utc = None
    if utc is None or not FIRST_YEAR <= utc.year <= LAST_YEAR:
        raise TimeFormatError(what, f"{shown} is outside the range of UTC times desk can store "
                                    f"(years {FIRST_YEAR}-{LAST_YEAR})")
    return utc


def format_time(when: dt.datetime, unit: Unit = "second") -> str:
    """`when` in UTC: `YYYY-MM-DDTHH:MM:SSZ` (below a second dropped), `…:SS.ffffffZ`, or `YYYY-MM-DD`;
    ValueError for a naive datetime (desk never guesses the local clock)."""
    if when.utcoffset() is None:
        raise ValueError(f"{when} has no timezone; desk formats aware times only")
    t = when.astimezone(_UTC)
    day = f"{t.year:04d}-{t.month:02d}-{t.day:02d}"  # strftime's %Y drops the zeros of years < 1000
    if unit == "day":
        return day
    clock = f"{day}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    return f"{clock}.{t.microsecond:06d}Z" if unit == "microsecond" else f"{clock}Z"
