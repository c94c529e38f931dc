"""The generator's knobs, as one frozen options object."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from binlake.generate.tables import TABLE_NAMES

ROW_IMAGES = ("full", "minimal", "noblob")

# Transactions per day at --scale 1: with the default JSON size a day is about 100 MB of binlog (measured:
# 60046 transactions, 119505 row changes, 98.6 MB for seed 1).
TRANSACTIONS_PER_DAY_AT_SCALE_1 = 60_000


@dataclass(frozen=True, slots=True)
class GenerateConfig:
    seed: int = 1
    days: int = 2
    scale: float = 1.0
    tables: tuple[str, ...] = TABLE_NAMES
    json_size: int = 1000  # approximate bytes of JSON text of an order document
    partial_share: float = 0.8  # share of JSON updates shaped as JSON_SET/REPLACE/REMOVE/INSERT edits
    compression_share: float = 0.2  # share of transactions written as zstd TRANSACTION_PAYLOAD events
    row_image: str = "full"  # binlog_row_image: full, minimal or noblob
    start_date: dt.date = dt.date(2024, 3, 1)
    source: str = "shop-primary"
    server_id: int = 1
    max_binlog_size: int = 0  # 0: a quarter of a day's expected bytes (several files per day)
    alter_day: int = -1  # day index of ALTER TABLE customers ADD COLUMN; -1: the middle day
    ddl: bool = False  # extra tables and the DDL plan of binlake.generate.schema_changes

    @property
    def transactions_per_day(self) -> int:
        return max(20, int(TRANSACTIONS_PER_DAY_AT_SCALE_1 * self.scale))

    @property
    def effective_alter_day(self) -> int:
        return (self.days - 1) // 2 if self.alter_day < 0 else self.alter_day

    @property
    def rotate_size(self) -> int:
        if self.max_binlog_size:
            return self.max_binlog_size
        return max(64 * 1024, int(100 * 1024 * 1024 * self.scale) // 4)

    def date_of(self, day: int) -> dt.date:
        return self.start_date + dt.timedelta(days=day)
