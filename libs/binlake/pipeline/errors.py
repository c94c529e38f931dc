"""Errors of ``binlake.pipeline``."""

from binlake.errors import BinlakeError


class PipelineError(BinlakeError):
    """Base of the pipeline's errors."""


class FilterSyntaxError(PipelineError):
    """An include/exclude pattern or a GTID set that does not parse."""


class OrderingKeyError(PipelineError):
    """A change whose (file sequence, position, row) can not be packed into ``_binlake_seq``."""


class DecodeFailed(PipelineError):
    """A stretch of a binlog could not be decoded and the source's policy is ``--on-decode-error fail``: the
    source stops there (nothing of the ingest is written)."""
