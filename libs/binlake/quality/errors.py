"""Errors of ``binlake.quality``. A validation that fails raises one of two, with distinct exit codes: the checks
ran and an error-level one failed (:class:`QualityCheckFailed`, 1), or part of the lake could not be validated
(:class:`NotValidated`, 2, like every other binlake error that stops a command)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binlake.errors import BinlakeError

if TYPE_CHECKING:
    from binlake.quality.runner import ValidationSummary


class QualityError(BinlakeError):
    """Base of the data-quality errors."""


class ValidationFailed(QualityError):
    """The validated load must not be published. ``summary`` holds every result."""

    def __init__(self, summary: "ValidationSummary", message: str) -> None:
        super().__init__(" ".join(message.split()))  # one line, whatever the names in it hold
        self.summary = summary


class QualityCheckFailed(ValidationFailed):
    """Everything was validated and an error-level expectation failed."""

    exit_code = 1

    def __init__(self, summary: "ValidationSummary") -> None:
        failed = summary.failed_errors
        names = ", ".join(f"{r.suite}:{r.expectation_type}({r.columns or '-'})" for r in failed[:5])
        more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
        super().__init__(
            summary,
            f"data quality run {summary.run_id}: {len(failed)} error-level expectation(s) "
            f"failed: {names}{more}; see {summary.report_path}",
        )


class NotValidated(ValidationFailed):
    """A suite or a silver table could not be validated (no definition for it, an unreadable table, an
    expectation that raised): the run fails, whatever the other checks found."""

    exit_code = 2

    def __init__(self, summary: "ValidationSummary") -> None:
        items = summary.not_validated
        failed = len(summary.failed_errors)
        also = f"; {failed} error-level expectation(s) failed too" if failed else ""
        super().__init__(
            summary,
            f"data quality run {summary.run_id}: {len(items)} check(s) could not be "
            f"validated: {items[0]}{' (and more)' if len(items) > 1 else ''}{also}; see "
            f"{summary.report_path}",
        )


class LakeLayoutError(QualityError):
    """A table the validation needs is missing or has an unexpected shape."""
