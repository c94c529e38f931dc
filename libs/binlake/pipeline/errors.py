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


class LandingFileError(PipelineError):
    """A landing file planned for ingest could not be opened as a regular file when an executor came to read it
    (replaced by a symbolic link, removed, or unreadable since the plan): nothing of the ingest is written."""
