"""Spark and Delta: the lake side of binlake.

``binlake.lake.delta`` holds the one small interface every Delta write goes through, with two engines behind it
(``rust``: the ``deltalake`` package, embedded default; ``spark``: delta-spark when its jars are on the
classpath). ``binlake.lake.session`` builds local Spark sessions. Nothing here imports pyspark, deltalake or
pyarrow at module import time: the fast tier and the CLI stay light.
"""
