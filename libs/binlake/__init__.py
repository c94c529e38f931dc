"""binlake: MySQL 8 / MariaDB binary logs into a lakehouse.

Layers (dependencies point one way): ``binlog``, ``mysqljson`` and ``sdi`` are pure decoders/encoders of
bytes; ``pipeline`` is the WL#6827-shaped handler chain; ``lake`` and ``quality`` hold the Spark/Delta and
Great Expectations work. See docs/ARCHITECTURE.md.
"""

__version__ = "0.1.0"
