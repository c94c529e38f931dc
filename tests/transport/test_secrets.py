"""Secrets and trust (issue #25, case 7): the password goes out in clear text only over verified TLS and only when
the user allowed it; a source URI can not make binlake send an arbitrary environment variable or file.

The scripted server (fake_mysql.py) switches the login to a clear-text plugin and records every byte the client
sends: the password's bytes must not be among them."""

from __future__ import annotations

import os

import pytest

from binlake.snapshot.server import ServerSession
from binlake.transport.auth import CleartextPasswordRefused, auth_plugin_map
from binlake.transport.client import ReplicationClient
from binlake.transport.errors import SourceUriError
from binlake.transport.uri import parse_mysql_uri
from tests.transport.fake_mysql import FakeMySQL8, Script

SECRET = "hunter2-S3CRET"
SWITCHES = {
    "mysql_clear_password": b"mysql_clear_password\x00",
    "dialog": b"dialog\x00\x04Password: ",
}  # MariaDB PAM: flag 4 (password question), prompt


def _leaked(script: Script) -> bool:
    return any(SECRET.encode() in packet for packet in script.received)


def _connect(kind: str, port: int, extra: str = "", **kw) -> None:
    src = parse_mysql_uri(f"mysql://repl@127.0.0.1:{port}/?server_id=4242&name=h{extra}", **kw)
    session = ReplicationClient(src) if kind == "replica" else ServerSession(src)
    try:
        session.connect()
    finally:
        session.close()


@pytest.mark.parametrize("kind", ["replica", "snapshot"])
@pytest.mark.parametrize("plugin", sorted(SWITCHES))
@pytest.mark.parametrize("extra,allow", [("", False), ("", True)])
def test_a_switch_to_a_cleartext_plugin_on_a_plain_connection_is_refused(
    monkeypatch, kind, plugin, extra, allow
) -> None:
    monkeypatch.setenv("BINLAKE_MYSQL_PASSWORD", SECRET)
    script = Script([("binlog.000001", b"")], auth_switch=SWITCHES[plugin])
    with FakeMySQL8(script) as server:
        with pytest.raises(CleartextPasswordRefused, match=f"in clear text \\({plugin}\\); refused"):
            _connect(kind, server.port, extra, allow_cleartext_password=allow)
    assert len(script.received) == 1 and not _leaked(script)  # the HandshakeResponse, then nothing


def test_a_plain_login_still_works_and_never_sends_the_password_itself(monkeypatch) -> None:
    monkeypatch.setenv("BINLAKE_MYSQL_PASSWORD", SECRET)
    script = Script([("binlog.000001", b"")])
    with FakeMySQL8(script) as server:
        _connect("replica", server.port)
    assert script.received and not _leaked(script)


def test_the_refusal_is_one_line_on_the_cli(monkeypatch, tmp_path, capsys) -> None:
    from binlake.cli import main

    monkeypatch.setenv("BINLAKE_MYSQL_PASSWORD", SECRET)
    script = Script([("binlog.000001", b"")], auth_switch=SWITCHES["mysql_clear_password"])
    with FakeMySQL8(script) as server:
        code = main(
            [
                "fetch",
                "--source",
                f"mysql://repl@127.0.0.1:{server.port}/?server_id=4242&name=h",
                "--landing",
                str(tmp_path),
                "--allow-cleartext-password",
            ]
        )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "ssl_ca" in err[0] and not _leaked(script)


class _Packet:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def read_uint8(self) -> int:
        self.pos += 1
        return self.data[self.pos - 1]

    def read_all(self) -> bytes:
        out, self.pos = self.data[self.pos :], len(self.data)
        return out

    def check_error(self) -> None:
        pass

    def is_ok_packet(self) -> bool:
        return self.data[:1] == b"\x00"


class _Conn:
    """What the guard uses of a PyMySQL connection after its TLS upgrade."""

    def __init__(self, secure: bool) -> None:
        self._secure, self.password, self.written = secure, SECRET.encode(), []

    def write_packet(self, data: bytes) -> None:
        self.written.append(data)

    def _read_packet(self) -> _Packet:
        return _Packet(b"\x00\x00\x00")


@pytest.mark.parametrize(
    "uri,allow,secure,sent",
    [
        ("&ssl_ca=/ca.pem", True, True, True),  # verified TLS and allowed: the one case it goes out
        ("&ssl_ca=/ca.pem", False, True, False),  # not allowed
        ("&ssl=1", True, True, False),  # TLS but the server's certificate is not verified
        ("&ssl_ca=/ca.pem", True, False, False),  # PyMySQL did not upgrade the connection
    ],
)
def test_cleartext_goes_out_only_over_verified_tls_when_allowed(uri, allow, secure, sent) -> None:
    src = parse_mysql_uri(f"mysql://u@h/?server_id=1{uri}", allow_cleartext_password=allow)
    for plugin, packet in (("mysql_clear_password", b""), ("dialog", b"\x05Password: ")):
        conn = _Conn(secure)
        guard = auth_plugin_map(src)[plugin](conn)
        if sent:
            guard.authenticate(_Packet(packet))
            assert conn.written == [SECRET.encode() + b"\0"]
        else:
            with pytest.raises(CleartextPasswordRefused):
                guard.authenticate(_Packet(packet))
            assert conn.written == []


# --- where the password may come from -----------------------------------------------------------------------------


def test_a_uri_names_only_binlake_or_mysql_variables(monkeypatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    for name in ("AWS_SECRET_ACCESS_KEY", "HOME", "BINLAKE_", "binlake_x"):
        with pytest.raises(SourceUriError, match="must name a variable starting with BINLAKE_ or MYSQL_"):
            parse_mysql_uri(f"mysql://u@h/?server_id=1&password_env={name}")
    assert parse_mysql_uri("mysql://u@h/?server_id=1&password_env=MYSQL_PWD").password_env == "MYSQL_PWD"
    assert parse_mysql_uri("mysql://u@h/?server_id=1&password_env=BINLAKE_DB1_PW").password_env == "BINLAKE_DB1_PW"
    # the command line (the user's own choice) names any variable, and wins over the URI's
    src = parse_mysql_uri("mysql://u@h/?server_id=1&password_env=HOME", password_env="AWS_SECRET_ACCESS_KEY")
    assert src.password() == SECRET


def test_a_uri_names_no_password_file(tmp_path) -> None:
    secret = tmp_path / "pw"
    secret.write_text(SECRET + "\n")
    for path in (secret, "/etc/passwd", "/proc/self/environ", os.path.expanduser("~/.pgpass")):
        with pytest.raises(SourceUriError, match=r"password_file in a URI is refused.*--password-file"):
            parse_mysql_uri(f"mysql://u@h/?server_id=1&password_file={path}")
    # --password-file on the command line: the user's own choice (and it wins over a URI's)
    assert parse_mysql_uri("mysql://u@h/?server_id=1", password_file=secret).password() == SECRET


def test_cleartext_is_allowed_from_the_command_line_only() -> None:
    with pytest.raises(SourceUriError, match="unknown parameter"):
        parse_mysql_uri("mysql://u@h/?server_id=1&allow_cleartext_password=1")
    assert parse_mysql_uri("mysql://u@h/?server_id=1", allow_cleartext_password=True).allow_cleartext_password
