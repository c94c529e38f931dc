"""File identity and the ordering key."""

from __future__ import annotations

import subprocess

import pytest

from binlake.pipeline.errors import OrderingKeyError
from binlake.pipeline.identity import file_sequence, identify, ordering_key, split_ordering_key


def test_ordering_key_orders_like_file_position_row():
    keys = [(1, 4, 0), (1, 4, 1), (1, 120, 0), (2, 4, 0), (2, 4_000_000_000, 4095), (3, 4, 0)]
    packed = [ordering_key(*k) for k in keys]
    assert packed == sorted(packed) and len(set(packed)) == len(packed)
    assert split_ordering_key(ordering_key(42, 123456, 7)) == (42, 123456, 7)
    assert ordering_key(1, 4, 9000) == ordering_key(1, 4, 4095)  # rows saturate (documented)
    with pytest.raises(OrderingKeyError):
        ordering_key(1, 1 << 32, 0)


def test_file_sequence_from_names():
    assert file_sequence("/x/mysql-bin.000042") == 42
    assert file_sequence("binlog.1000000") == 1_000_000
    with pytest.raises(OrderingKeyError, match="numeric suffix"):
        file_sequence("binlog.index")


def test_identity_hash_matches_sha256sum(tmp_path):
    p = tmp_path / "binlog.000007"
    p.write_bytes(b"\xfebin" + bytes(range(256)) * 5000)
    ident = identify("src", p)
    expected = subprocess.run(["sha256sum", str(p)], capture_output=True, text=True, check=True).stdout.split()[0]
    assert (ident.source, ident.name, ident.size, ident.sha256, ident.sequence) == (
        "src",
        "binlog.000007",
        4 + 256 * 5000,
        expected,
        7,
    )
