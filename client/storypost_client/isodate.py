"""Reading ISO 8601 date-times alike on every Python the SDK supports."""

from __future__ import annotations

import re
import sys
from datetime import datetime

# Python 3.10's fromisoformat takes no `Z` and only 3 or 6 digits of fractional seconds.
_FRACTION = re.compile(r"(\d{2}:\d{2}:\d{2})\.(\d{1,6})(?=$|[+-])")


def parse_iso(text: str) -> datetime:
    """`datetime.fromisoformat` as Python 3.11 reads what callers write (`…T09:30:00Z`,
    `…T09:30:00.5+01:00`); ValueError when it is not a date-time."""
    if sys.version_info < (3, 11):
        text = text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text
        text = _FRACTION.sub(lambda m: f"{m.group(1)}.{m.group(2).ljust(6, '0')}", text)
    return datetime.fromisoformat(text)
