"""``mysql://user@host:port/[binlog file]?server_id=N&...``: a live server as a binlog source (WL#3283 transports by
URI). The optional path names one binlog file (for :func:`binlake.binlog.open_binlog`); ``binlake fetch`` ignores it.

Query parameters:

``server_id`` (required)  the replica id binlake registers with; must differ from every other replica's and from
                          the server's own (a server drops the older of two replicas that share an id).
``name``                  the landing sub-folder (default ``<host>-<port>``).
``password_env``          environment variable holding the password (default ``BINLAKE_MYSQL_PASSWORD``); in the URI
                          only a name starting with ``BINLAKE_`` or ``MYSQL_`` (any name: ``--password-env``).
``password_file``         refused in the URI: a file whose first line is the password is named on the command
                          line only (``--password-file``; it wins over ``password_env``).
``heartbeat``             seconds between server heartbeats when the binlog is idle (default 5; 0 disables).
``semi_sync``             ``1`` to ACK events as a semi-sync replica, after they are fsynced (default 0).
``connect_timeout``       seconds (default 10).
``read_timeout``          seconds the server may stay silent while binlake signs on, or in a dump that ends at the
                          end of the binlog without heartbeats (default 30); a server that says nothing for that
                          long is an error, not retried.
``ssl``                   ``1`` to require TLS (default: TLS when the server offers it); the server's certificate
                          is checked only with ``ssl_ca``.
``ssl_ca``                CA file: require TLS and verify the server's certificate and host name.
``max_packet``            largest replication packet (one event plus its OK byte and semi-sync header) accepted,
                          in bytes (default 1 GiB plus 1 KiB: MySQL's largest ``max_allowed_packet`` plus headers).

A password in the URI itself is refused: URIs end up in process lists, DAG files and logs. A URI may also come
from configuration someone else wrote, so it can not point binlake at an arbitrary secret of the machine (any
environment variable or file would be sent to the server it names): those choices belong to the command line,
and so does ``--allow-cleartext-password`` (``allow_cleartext_password=True``): a server that asks for the password
in clear text (``mysql_clear_password``, MariaDB PAM's ``dialog``) gets it only with that option and only over TLS
verified with ``ssl_ca``; otherwise the login is refused (:mod:`binlake.transport.auth`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from binlake.transport.errors import SourceUriError

SCHEME = "mysql"
DEFAULT_PORT = 3306
DEFAULT_PASSWORD_ENV = "BINLAKE_MYSQL_PASSWORD"
KNOWN_PARAMS = frozenset(
    {
        "server_id",
        "name",
        "password_env",
        "password_file",
        "heartbeat",
        "semi_sync",
        "connect_timeout",
        "read_timeout",
        "ssl",
        "ssl_ca",
        "max_packet",
    }
)
MAX_PACKET = (1 << 30) + 1024
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
URI_PASSWORD_ENV_RE = re.compile(r"(BINLAKE|MYSQL)_[A-Za-z0-9_]{1,120}\Z")


@dataclass(frozen=True, slots=True)
class MySQLSource:
    """A parsed ``mysql://`` source; carries where the password is, never the password itself."""

    host: str
    port: int
    user: str
    server_id: int
    name: str
    password_env: str = DEFAULT_PASSWORD_ENV
    password_file: Path | None = None
    heartbeat_s: float = 5.0
    semi_sync: bool = False
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0
    ssl: bool = False
    ssl_ca: Path | None = None
    binlog_file: str | None = None
    max_packet: int = MAX_PACKET
    allow_cleartext_password: bool = False

    def display(self) -> str:
        """The URI without secrets, for messages and logs."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"mysql://{self.user}@{host}:{self.port}/?server_id={self.server_id}"

    def pymysql_ssl(self) -> dict[str, object] | None:
        """PyMySQL's ``ssl`` argument: None lets it use TLS when offered; a dict makes TLS required."""
        if self.ssl_ca is not None:
            return {"ca": str(self.ssl_ca), "check_hostname": True, "verify_mode": True}
        return {"verify_mode": False} if self.ssl else None

    def password(self) -> str | None:
        """The password from ``password_file`` or the ``password_env`` variable (None when neither is set)."""
        if self.password_file is not None:
            try:
                lines = self.password_file.read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                raise SourceUriError(f"cannot read the password file {self.password_file}: {exc.strerror}") from None
            return lines[0] if lines else ""
        return os.environ.get(self.password_env)


def parse_mysql_uri(
    uri: str,
    *,
    password_env: str | None = None,
    password_file: str | os.PathLike[str] | None = None,
    name: str | None = None,
    allow_cleartext_password: bool = False,
) -> MySQLSource:
    """Parse a ``mysql://`` URI; keyword arguments (from the CLI) override the URI's own parameters."""
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 -- validates the bracketed IPv6 host and the port here
    except ValueError as exc:
        hint = "; an IPv6 host is written mysql://user@[2001:db8::1]:3306/?server_id=N" if "IPv6" in str(exc) else ""
        raise SourceUriError(f"source {_safe(uri)} is not a valid URI ({exc}{hint})") from None
    if parts.scheme != SCHEME:
        raise SourceUriError(f"source {uri!r} is not a mysql:// URI (expected mysql://user@host:port/?server_id=N)")
    if parts.password is not None:
        raise SourceUriError(
            "the source URI contains a password; remove it and pass the password in the"
            f" {DEFAULT_PASSWORD_ENV} environment variable (or --password-env/--password-file)"
        )
    if not parts.username:
        raise SourceUriError(f"source {_safe(uri)} names no user (expected mysql://user@host:port/?server_id=N)")
    if not parts.hostname:
        raise SourceUriError(f"source {_safe(uri)} names no host")
    port = parts.port or DEFAULT_PORT
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(params) - KNOWN_PARAMS)
    if unknown:
        raise SourceUriError(
            f"source {_safe(uri)}: unknown parameter(s) {', '.join(unknown)} (known: {', '.join(sorted(KNOWN_PARAMS))})"
        )
    if "server_id" not in params:
        raise SourceUriError(
            f"source {_safe(uri)} has no server_id: add ?server_id=N with an id no other replica"
            " of this server uses (a server disconnects the older of two replicas with one id)"
        )
    server_id = _int(params["server_id"], "server_id", 1, 0xFFFFFFFF)
    host = parts.hostname
    # an IPv6 address becomes a usable folder name: its colons as dashes
    landing_name = name or params.get("name") or f"{re.sub(r'[^A-Za-z0-9._-]', '-', host).strip('-._')}-{port}"
    if not NAME_RE.match(landing_name):
        raise SourceUriError(
            f"source name {landing_name!r} is not usable as a folder name (letters, digits, '.', '_', '-'; at most 128)"
        )
    if "password_file" in params:
        raise SourceUriError(
            f"source {_safe(uri)}: password_file in a URI is refused (a URI must not send any file of"
            " this machine to a server); pass --password-file FILE on the command line instead"
        )
    pw_file = password_file
    uri_env = params.get("password_env")
    if not password_env and uri_env and not URI_PASSWORD_ENV_RE.match(uri_env):
        raise SourceUriError(
            f"source {_safe(uri)}: password_env={uri_env!r} in a URI must name a variable starting "
            "with BINLAKE_ or MYSQL_ (a URI must not send just any environment variable to a "
            "server); rename the variable, or pass --password-env on the command line"
        )
    return MySQLSource(
        host=host,
        port=port,
        user=unquote(parts.username),
        server_id=server_id,
        name=landing_name,
        password_env=password_env or uri_env or DEFAULT_PASSWORD_ENV,
        password_file=Path(pw_file) if pw_file else None,
        allow_cleartext_password=allow_cleartext_password,
        heartbeat_s=_float(params.get("heartbeat", "5"), "heartbeat", 0.0, 4294967.0),
        semi_sync=_flag(params.get("semi_sync", "0"), "semi_sync"),
        connect_timeout_s=_float(params.get("connect_timeout", "10"), "connect_timeout", 0.1, 3600.0),
        read_timeout_s=_float(params.get("read_timeout", "30"), "read_timeout", 0.1, 3600.0),
        ssl=_flag(params.get("ssl", "0"), "ssl") or bool(params.get("ssl_ca")),
        ssl_ca=Path(params["ssl_ca"]) if params.get("ssl_ca") else None,
        binlog_file=_binlog_file(parts.path),
        max_packet=_int(params.get("max_packet", str(MAX_PACKET)), "max_packet", 1024, MAX_PACKET),
    )


def _binlog_file(raw_path: str) -> str | None:
    """The binlog file named by the URI path (percent-decoded), checked like the names a server sends."""
    from binlake.transport.protocol import binlog_name_problem

    if "@" in raw_path:
        raise SourceUriError(
            f"the URI path {raw_path!r} holds '@': the user goes before the host "
            "(mysql://user@host:port/binlog.000042?server_id=N); write a literal '@' as %40"
        )
    name = unquote(raw_path)
    name = name[1:] if name.startswith("/") else name
    if not name:
        return None
    reason = binlog_name_problem(name)
    if reason is not None:
        raise SourceUriError(f"the URI path {raw_path!r} must be one binlog file name (e.g. /binlog.000042): {reason}")
    return name


def _safe(uri: str) -> str:
    return re.sub(r"//[^@/]*@", "//…@", uri)


def _int(text: str, what: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise SourceUriError(f"{what}={text!r} is not an integer") from None
    if not low <= value <= high:
        raise SourceUriError(f"{what}={value} is out of range ({low}..{high})")
    return value


def _float(text: str, what: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SourceUriError(f"{what}={text!r} is not a number of seconds") from None
    if not low <= value <= high:
        raise SourceUriError(f"{what}={value} is out of range ({low}..{high} s)")
    return value


def _flag(text: str, what: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off", ""):
        return False
    raise SourceUriError(f"{what}={text!r}: expected 0 or 1")
