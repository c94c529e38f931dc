"""QUERY_EVENT status variables (``Query_event::Query_event`` in libbinlogevents' ``statement_events.cpp``):
the client character set a statement was written in (``Q_CHARSET_CODE``).

The variables are (code, value) pairs whose value length depends on the code; a code this reader does not know
ends the walk, since the length of what follows it is unknown. MySQL writes ``Q_CHARSET_CODE`` after only fixed
or length-prefixed variables (flags, SQL mode, catalog, auto-increment), so that stops nothing in practice."""

from __future__ import annotations

from typing import Optional

Q_CHARSET_CODE = 4
# code -> the fixed length of its value (MySQL 8 and MariaDB's Q_HRNOW, Q_XID)
_FIXED = {0: 4, 1: 8, 3: 4, 7: 2, 8: 2, 9: 8, 10: 4, 13: 3, 16: 1, 17: 8, 18: 2, 19: 1, 20: 1, 128: 3, 129: 8}
_LENGTH_PREFIXED = (5, 6)  # Q_TIME_ZONE_CODE, Q_CATALOG_NZ_CODE: a length byte, then the text
Q_CATALOG_CODE = 2  # (before 5.0.4) a length byte, the text and a NUL


def client_collation(status_vars: bytes) -> Optional[int]:
    """The ``character_set_client`` collation id of ``Q_CHARSET_CODE``, or None (absent, or after a variable
    this reader can not step over)."""
    i, n = 0, len(status_vars)
    while i < n:
        code = status_vars[i]
        i += 1
        if code == Q_CHARSET_CODE:
            return int.from_bytes(status_vars[i : i + 2], "little") if i + 6 <= n else None
        if code in _FIXED:
            i += _FIXED[code]
        elif code in _LENGTH_PREFIXED and i < n:
            i += 1 + status_vars[i]
        elif code == Q_CATALOG_CODE and i < n:
            i += 2 + status_vars[i]
        else:
            return None
    return None
