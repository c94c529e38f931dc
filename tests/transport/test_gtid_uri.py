"""GTID set encoding (Gtid_set::encode, hand-assembled bytes) and mysql:// source URIs."""

from __future__ import annotations

import uuid

import pytest

from binlake.transport.errors import SourceUriError
from binlake.transport.gtid import encode_gtid_set, validate_mariadb_gtid_pos
from binlake.transport.uri import parse_mysql_uri

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "00000000-0000-0000-0000-0000000000aa"


def q(v: int) -> bytes:
    return v.to_bytes(8, "little")


def test_untagged_set_bytes() -> None:
    # n_sids=2; sids in uuid order; intervals [start, end+1); 1-3 and 4-5 merge into one interval 1-5
    got = encode_gtid_set(f"{U1}:1-3:4-5:9, {U2}:7")
    expected = q(2) + uuid.UUID(U2).bytes + q(1) + q(7) + q(8) + uuid.UUID(U1).bytes + q(2) + q(1) + q(6) + q(9) + q(10)
    assert got == expected


def test_tagged_set_bytes() -> None:
    # tagged format: n_sids word = 1<<56 | n<<8 | 1; tag = varlen length (len<<1) + characters, untagged sid: 00
    got = encode_gtid_set(f"{U1}:1-2:Blue:5")
    word = (1 << 56 | 2 << 8 | 1).to_bytes(8, "little")
    assert word == bytes.fromhex("0102000000000001")
    expected = (
        word
        + uuid.UUID(U1).bytes
        + b"\x00"
        + q(1)
        + q(1)
        + q(3)
        + uuid.UUID(U1).bytes
        + b"\x08blue"
        + q(1)
        + q(5)
        + q(6)
    )
    assert got == expected


def test_empty_set_is_eight_zero_bytes() -> None:
    assert encode_gtid_set("") == bytes(8)


@pytest.mark.parametrize(
    "text, message",
    [
        ("not-a-uuid:1-5", "not a server UUID"),
        (f"{U1}:5-3", "empty or out of range"),
        (f"{U1}:x!", "neither an interval"),
        (f"{U1}:tag", "has no interval"),
    ],
)
def test_bad_gtid_sets(text: str, message: str) -> None:
    with pytest.raises(SourceUriError, match=message):
        encode_gtid_set(text)


def test_mariadb_gtid_position() -> None:
    assert validate_mariadb_gtid_pos(" 0-1-100, 1-2-7 ") == "0-1-100,1-2-7"
    with pytest.raises(SourceUriError, match="domain-server-seqno"):
        validate_mariadb_gtid_pos("0-1-100'; DROP TABLE x; --")


def test_uri_fields_and_defaults() -> None:
    src = parse_mysql_uri("mysql://repl@db1.example:3307/?server_id=4242&heartbeat=2&semi_sync=1")
    assert (src.host, src.port, src.user, src.server_id, src.name) == (
        "db1.example",
        3307,
        "repl",
        4242,
        "db1.example-3307",
    )
    assert src.heartbeat_s == 2.0 and src.semi_sync and src.password_env == "BINLAKE_MYSQL_PASSWORD"
    assert parse_mysql_uri("mysql://u@h/?server_id=1&name=prod").name == "prod"
    assert parse_mysql_uri("mysql://u@h/?server_id=1").port == 3306


@pytest.mark.parametrize(
    "uri, message",
    [
        ("mysql://repl:secret@h/?server_id=1", "contains a password"),
        ("mysql://h/?server_id=1", "names no user"),
        ("mysql://u@h/", "has no server_id"),
        ("mysql://u@h/?server_id=0", "out of range"),
        ("mysql://u@h/?server_id=1&bogus=1", "unknown parameter"),
        ("postgres://u@h/?server_id=1", "not a mysql:// URI"),
        ("mysql://u@h/?server_id=1&name=../x", "not usable as a folder"),
    ],
)
def test_bad_uris(uri: str, message: str) -> None:
    with pytest.raises(SourceUriError, match=message) as info:
        parse_mysql_uri(uri)
    assert "secret" not in str(info.value)


def test_tls_settings() -> None:
    assert parse_mysql_uri("mysql://u@h/?server_id=1").pymysql_ssl() is None  # TLS when offered
    assert parse_mysql_uri("mysql://u@h/?server_id=1&ssl=1").pymysql_ssl() == {"verify_mode": False}
    assert parse_mysql_uri("mysql://u@h/?server_id=1&ssl_ca=/etc/ca.pem").pymysql_ssl() == {
        "ca": "/etc/ca.pem",
        "check_hostname": True,
        "verify_mode": True,
    }


def test_password_from_env_or_file(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MY_PW", "s3cret")
    src = parse_mysql_uri("mysql://u@h/?server_id=1", password_env="MY_PW")
    assert src.password() == "s3cret"
    assert "s3cret" not in repr(src) and "s3cret" not in src.display()
    secret = tmp_path / "pw"
    secret.write_text("from-file\nignored\n")
    assert parse_mysql_uri("mysql://u@h/?server_id=1", password_file=secret).password() == "from-file"
    with pytest.raises(SourceUriError, match="cannot read the password file"):
        parse_mysql_uri("mysql://u@h/?server_id=1", password_file=tmp_path / "missing").password()
