"""Errors of ``binlake.orchestration`` (the logic behind the Airflow DAGs)."""

from binlake.errors import BinlakeError


class OrchestrationError(BinlakeError):
    """Base of the orchestration's errors."""


class FetchFailed(OrchestrationError):
    """``binlake fetch`` for a source with a server connection did not finish."""
