"""Which authentication exchanges may carry the password itself, for both server connections (replica and snapshot).

``mysql_clear_password`` (``sql-common/client_authentication.cc`` ``clear_password_auth_client``) and MariaDB's
``dialog`` (PAM; ``plugin/auth_pam``) send the password as plain bytes. A server may switch any login to them
(AuthSwitchRequest, 0xFE), so a hostile or impersonated server would read the password from a plain connection.
The MySQL client library refuses them unless ``--enable-cleartext-plugin``; binlake likewise sends the password in
clear text only when the user allowed it on the command line (``--allow-cleartext-password``) and
only over TLS whose certificate was verified (``ssl_ca``). Otherwise the login stops with
:class:`CleartextPasswordRefused` before a byte of the password is written.

PyMySQL calls the handler registered for a plugin name (``auth_plugin_map``) instead of its own exchange.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from binlake.transport.errors import AuthenticationError

if TYPE_CHECKING:
    from binlake.transport.uri import MySQLSource

CLEARTEXT_PLUGINS = ("mysql_clear_password", "dialog")


class CleartextPasswordRefused(AuthenticationError):
    """The server asked for the password in clear text where the user did not allow it."""


def cleartext_problem(source: "MySQLSource", secure: bool) -> str | None:
    """Why the password may not go out in clear text on this connection (None: it may)."""
    if not source.allow_cleartext_password:
        return "the user did not allow it (--allow-cleartext-password)"
    if not secure or source.ssl_ca is None:
        return "the connection is not TLS with a verified server certificate (add ssl_ca=CA_FILE to the URI)"
    return None


def auth_plugin_map(source: "MySQLSource") -> dict[str, type]:
    """PyMySQL's ``auth_plugin_map`` guarding the clear-text plugins of ``source``'s connections."""
    return {name: _handler(source, name) for name in CLEARTEXT_PLUGINS}


def _handler(source: "MySQLSource", plugin: str) -> type:
    class Guard:
        def __init__(self, conn: Any) -> None:
            self.conn = conn

        def authenticate(self, packet: Any) -> Any:
            problem = cleartext_problem(source, bool(getattr(self.conn, "_secure", False)))
            if problem is not None:
                raise CleartextPasswordRefused(
                    f"{source.display()}: the server asks for the password in clear text ({plugin}); refused: "
                    f"{problem}. Use ssl_ca and --allow-cleartext-password only for a server you trust, "
                    "or give the user mysql_native_password / caching_sha2_password / ed25519 on the server"
                )
            return _send_password(self.conn, packet, plugin, source)

    Guard.__name__ = f"Guard_{plugin}"
    return Guard


def _send_password(conn: Any, packet: Any, plugin: str, source: "MySQLSource") -> Any:
    """The allowed exchange: the password and a NUL (``dialog``: to each password prompt)."""
    if plugin == "mysql_clear_password":
        conn.write_packet(conn.password + b"\0")
        reply = conn._read_packet()
        reply.check_error()
        return reply
    while True:  # dialog: flag byte (0x01: last question), then the prompt
        flag = packet.read_uint8()
        prompt = packet.read_all()
        if b"password" not in prompt.lower():
            raise AuthenticationError(
                f"{source.display()}: the server's dialog asks {prompt[:80]!r}; binlake answers only a password prompt"
            )
        conn.write_packet(conn.password + b"\0")
        packet = conn._read_packet()
        packet.check_error()
        if packet.is_ok_packet() or flag & 0x01:
            return packet
