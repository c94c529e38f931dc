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


def _sha256sum(path) -> str:
    return subprocess.run(["sha256sum", str(path)], capture_output=True, text=True, check=True).stdout.split()[0]


def test_an_unchanged_file_is_hashed_once_and_a_changed_one_again(tmp_path, monkeypatch):
    """A run's look-ahead and its ingest identify the same new files: the second reads nothing. Any write since
    (appended bytes, the same size rewritten, even with its modification time set back) hashes again."""
    import hashlib
    import os

    from binlake.pipeline import identity

    hashed, sha256 = [], hashlib.sha256
    monkeypatch.setattr(identity.hashlib, "sha256", lambda: hashed.append(1) or sha256())
    p = tmp_path / "binlog.000003"
    p.write_bytes(b"\xfebin" + b"a" * 3000)
    first = identify("src", p)
    assert identify("src", p) == first and len(hashed) == 1
    assert identify("other", p).source == "other" and len(hashed) == 2  # another source's identity is its own

    with open(p, "ab") as f:
        f.write(b"b" * 10)
    grown = identify("src", p)
    assert (grown.size, grown.sha256) == (3014, _sha256sum(p)) and len(hashed) == 3

    st = os.stat(p)
    p.write_bytes(b"\xfebin" + b"c" * 3010)  # the same size, other bytes, modification time set back
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    rewritten = identify("src", p)
    assert (rewritten.size, rewritten.sha256) == (3014, _sha256sum(p)) and rewritten.sha256 != grown.sha256
