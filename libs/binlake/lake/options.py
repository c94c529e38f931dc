"""What one run of the jobs does, for one source (one frozen options object, passed whole)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Optional

from binlake.errors import BinlakeError
from binlake.pipeline.bronze import DECODE_ERROR_POLICIES
from binlake.pipeline.filters import TableFilter
from binlake.pipeline.split import DEFAULT_CHUNK_BYTES


@dataclass(frozen=True, slots=True)
class RunOptions:
    source: str
    tables: TableFilter = TableFilter()
    cutoff_us: Optional[int] = None  # apply changes committed before this (microseconds, UTC)
    history: bool = False  # also write SCD2 history tables
    temporal_text: bool = False  # DATE/DATETIME/TIMESTAMP as MySQL's text instead of typed
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    run_id: str = ""
    on_decode_error: str = "quarantine"  # an undecodable stretch: quarantine it and go on, or fail the source

    def __post_init__(self) -> None:
        if self.on_decode_error not in DECODE_ERROR_POLICIES:
            raise BinlakeError(
                f"on_decode_error {self.on_decode_error!r}: choose one of {', '.join(DECODE_ERROR_POLICIES)}"
            )

    def new_run_id(self) -> str:
        """``run_id``, or a fresh random one (each call) when none was given."""
        return self.run_id or uuid.uuid4().hex[:12]
