"""Random column values of the workload, in the value types the binlog row decoder returns.

Temporal values use :mod:`binlake.binlog.values` (``MysqlDate``, ``MysqlDateTime``, ``MysqlTimestamp``,
``MysqlTime``) so that a generated row compares equal to the decoded one. Values avoid what MySQL would change
on the way in: CHAR/BINARY values have no trailing pad characters, FLOATs are exact in single precision.
"""

from __future__ import annotations

import random
import struct
from decimal import Decimal
from typing import Any, Callable

from binlake.binlog.columns import shortest_float32
from binlake.binlog.values import MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp
from binlake.generate.jsondocs import WORDS

FIRST = ("Ana", "Bo", "Chloé", "Dmitri", "Eun-ji", "Farah", "Goran", "Hiroshi", "Ines", "João", "Kwame", "Lena")
LAST = ("Ålund", "Baker", "Czerny", "Dubois", "Eze", "Fischer", "García", "Hansen", "Ito", "Jovanović")
COUNTRIES = ("NL", "DE", "FR", "PT", "JP", "BR", "US", "CA", "NO", "HR")
_F32 = struct.Struct("<f")
_TS_MIN = 1_500_000_000  # 2017-07-14
_TS_SPAN = 250_000_000  # ~8 years


class ModelValues:
    """Value makers sharing the workload's one ``random.Random``."""

    __slots__ = ("rng",)

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def maybe(self, p_value: float, make: Callable[..., Any], *args: Any) -> Any:
        """``make(*args)`` with probability ``p_value``, else NULL (None)."""
        return make(*args) if self.rng.random() < p_value else None

    def word(self) -> str:
        return WORDS[self.rng.randrange(len(WORDS))]

    def name(self) -> str:
        r = self.rng
        return f"{FIRST[r.randrange(len(FIRST))]} {LAST[r.randrange(len(LAST))]}"

    def title(self) -> str:
        r = self.rng
        return " ".join(WORDS[r.randrange(len(WORDS))] for _ in range(r.randrange(2, 7))).capitalize()

    def country(self) -> str:
        return COUNTRIES[self.rng.randrange(len(COUNTRIES))]

    def text(self, max_len: int) -> str:
        r = self.rng
        words = []
        size = r.randrange(1, max_len)
        while size > 0:
            w = WORDS[r.randrange(len(WORDS))]
            words.append(w)
            size -= len(w) + 1
        return " ".join(words)

    def blob(self, max_len: int) -> bytes:
        return self.rng.randbytes(self.rng.randrange(0, max_len + 1))

    def binary(self, n: int) -> bytes:
        """A BINARY(n) value of exactly n bytes whose last byte is not the 0x00 pad."""
        return self.rng.randbytes(n - 1) + bytes((self.rng.randrange(1, 256),))

    def int32(self) -> int:
        return self.rng.randrange(-(2**31), 2**31)

    def decimal(self, precision: int, scale: int) -> Decimal:
        r = self.rng
        digits = r.randrange(10 ** (precision - 1))
        value = Decimal(digits).scaleb(-scale)
        return -value if r.random() < 0.1 else value

    def double(self) -> float:
        r = self.rng
        return (r.random() - 0.3) * 10 ** r.randrange(-3, 9)

    def float32(self) -> float:
        """A FLOAT value as the row decoder gives it: the shortest decimal of an IEEE single."""
        return shortest_float32(_F32.pack(self.rng.randrange(1, 2**23) / 64))

    def date(self) -> MysqlDate:
        r = self.rng
        return MysqlDate(r.randrange(1940, 2010), r.randrange(1, 13), r.randrange(1, 29))

    def datetime(self, fsp: int) -> MysqlDateTime:
        r = self.rng
        micro = _truncate(r.randrange(1_000_000), fsp)
        return MysqlDateTime(
            r.randrange(2015, 2025),
            r.randrange(1, 13),
            r.randrange(1, 29),
            r.randrange(24),
            r.randrange(60),
            r.randrange(60),
            micro,
            fsp,
        )

    def timestamp(self, fsp: int) -> MysqlTimestamp:
        r = self.rng
        return MysqlTimestamp(_TS_MIN + r.randrange(_TS_SPAN), _truncate(r.randrange(1_000_000), fsp), fsp)

    def time(self, fsp: int) -> MysqlTime:
        """A TIME in -838:59:59 .. 838:59:59 (never a negative zero, which MySQL stores as zero)."""
        r = self.rng
        return MysqlTime(
            r.random() < 0.1,
            r.randrange(1, 839),
            r.randrange(60),
            r.randrange(60),
            _truncate(r.randrange(1_000_000), fsp),
            fsp,
        )

    def set_of(self, elements: tuple[str, ...]) -> str:
        """A SET value as the row decoder gives it: member names in definition order, comma-separated."""
        return ",".join(e for e in elements if self.rng.random() < 0.4)


def _truncate(micro: int, fsp: int) -> int:
    step = 10 ** (6 - fsp)
    return micro - micro % step
