"""Error messages quote values, and a value can be anything a user or a file supplied: a quoted
value longer than MAX_QUOTED characters is cut, so a 5 MB string never makes a 5 MB error."""
from __future__ import annotations

import re

MAX_QUOTED = 80
_QUOTED = re.compile(r"('[^']{%d})[^']+'|(\"[^\"]{%d})[^\"]+\"" % (MAX_QUOTED, MAX_QUOTED))


def clip_values(message: str, max_len: int = 2000) -> str:
    """`message` with each quoted value cut to MAX_QUOTED characters, and at most max_len long."""
    out = _QUOTED.sub(lambda m: (m.group(1) or m.group(2)) + "..." + m.group(0)[0], message)
    return out if len(out) <= max_len else out[:max_len - 3] + "..."
