"""Parsing Apache combined-format access-log lines.

``parse_line`` returns an ``AccessRecord`` or None for a line that is not a well-formed combined
log entry (wrong shape, bad timestamp, or a request line that is not ``METHOD TARGET PROTOCOL``).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import NamedTuple

LINE = re.compile(
    r'(?P<ip>\S+) (?P<ident>\S+) (?P<user>\S+) \[(?P<time>[^\]]+)\] "(?P<request>[^"]*)" '
    r'(?P<status>\d{3}) (?P<size>\d+|-) "(?P<referrer>[^"]*)" "(?P<agent>[^"]*)"')
TIME_FORMAT = "%d/%b/%Y:%H:%M:%S %z"
FIELDS = ["ts", "ip", "method", "path", "status", "bytes"]


class AccessRecord(NamedTuple):
    """One request: ``ts`` in epoch seconds (UTC), ``path`` without its query string,
    ``bytes`` 0 when the log says ``-``."""

    ts: int
    ip: str
    method: str
    path: str
    status: int
    bytes: int


def parse_line(line: str) -> AccessRecord | None:
    """The record of a combined-format line, or None when the line is malformed."""
    m = LINE.fullmatch(line.rstrip("\r\n"))
    if m is None:
        return None
    parts = m.group("request").split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[1].startswith("/"):
        return None
    try:
        ts = int(datetime.strptime(m.group("time"), TIME_FORMAT).timestamp())
    except ValueError:
        return None
    size = m.group("size")
    return AccessRecord(ts, m.group("ip"), parts[0], parts[1].split("?", 1)[0],
                        int(m.group("status")), 0 if size == "-" else int(size))
