"""Errors of ``binlake.quality``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binlake.errors import BinlakeError

if TYPE_CHECKING:
    from binlake.quality.runner import ValidationSummary


class QualityError(BinlakeError):
    """Base of the data-quality errors."""


class QualityCheckFailed(QualityError):
    """An error-level expectation failed: the load must not be published. ``summary`` holds every result."""

    exit_code = 1

    def __init__(self, summary: "ValidationSummary") -> None:
        failed = summary.failed_errors
        names = ", ".join(f"{r.suite}:{r.expectation_type}({r.columns or '-'})" for r in failed[:5])
        more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
        super().__init__(f"data quality run {summary.run_id}: {len(failed)} error-level expectation(s) failed: "
                         f"{names}{more}; see {summary.report_path}")
        self.summary = summary


class LakeLayoutError(QualityError):
    """A table the validation needs is missing or has an unexpected shape."""
