"""The root of binlake's error hierarchy.

Each library (``binlake.binlog``, ``binlake.mysqljson``, ``binlake.sdi``, ...) defines its own subclasses in
its own ``errors`` module; the CLI catches :class:`BinlakeError` and prints its one-line message.
"""


class BinlakeError(Exception):
    """Base of every error binlake raises on purpose.

    ``exit_code`` is what the CLI exits with when this error reaches it.
    """

    exit_code = 2
