"""Headless Debian Chromium for the report tests: page text (--dump-dom), screenshots (--screenshot), and pages
loaded under the DevTools protocol (:class:`DevTools`: dialogs and script errors seen, the text a reader sees)."""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium() -> str:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.skip("chromium not installed; run: bash scripts/install_chromium.sh")
    return exe


def _run(page: Path, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
            capture_output=True,
            timeout=120,
            check=True,
        )


def dump_dom(page: Path) -> str:
    """The page's DOM after Chromium loaded it, as HTML text."""
    return _run(page, "--dump-dom").stdout.decode("utf-8", "replace")


def screenshot(page: Path, png: Path) -> Path:
    _run(page, f"--screenshot={png}", "--window-size=1280,1600", "--hide-scrollbars")
    return png


@dataclass
class PageRun:
    """What happened while a page loaded: the dialogs it opened (``alert``, ``confirm``, ...), the exceptions its
    scripts threw, its text afterwards and the values of the expressions asked for."""

    dialogs: list[str]
    exceptions: list[str]
    text: str  # document.body.innerText: what a reader sees
    values: dict[str, Any]


# no host name resolves: pages load offline at once (Data Docs name CDN scripts), the same on every machine
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND"


class DevTools:
    """Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: the browser
    reads commands on fd 3 and writes answers and events on fd 4, each a JSON text ended by a NUL byte); no
    WebSocket library needed. Each dialog a page opens is recorded and dismissed, so a script that calls
    ``alert`` is seen, not left blocking the page."""

    def __init__(self, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="chromium-profile-")
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()
        for fd in (cmd_r, out_w):  # above 4, so that moving them onto 3 and 4 clobbers neither
            high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
            os.close(fd)
            cmd_r, out_w = (high, out_w) if fd == cmd_r else (cmd_r, high)
        shell = f'exec "$@" 3<&{cmd_r} 4>&{out_w} {cmd_r}<&- {out_w}>&-'
        self._proc = subprocess.Popen(
            [
                "bash",
                "-c",
                shell,
                "bash",
                chromium(),
                *FLAGS,
                "--remote-debugging-pipe",
                OFFLINE,
                f"--user-data-dir={self._profile.name}",
                "about:blank",
            ],
            pass_fds=(cmd_r, out_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(cmd_r)
        os.close(out_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> "DevTools":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (OSError, TimeoutError, RuntimeError):
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._cmd_w, self._out_r):
            os.close(fd)
        self._profile.cleanup()

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._out_r], [], [], left)[0]:
                raise TimeoutError("Chromium sent nothing in time")
            chunk = os.read(self._out_r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        text, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(text)

    def send(self, method: str, params: Optional[dict[str, Any]] = None, session: Optional[str] = None) -> dict:
        """Run one command; events that arrive meanwhile are kept for :meth:`_drain`."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            got = self._message(deadline)
            if got.get("id") == self._next_id:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                return got.get("result", {})
            self._events.append(got)

    def _drain(self, session: str, dialogs: list[str], exceptions: list[str], until: str, quiet: float) -> None:
        """Handle the session's events until the event ``until`` and then ``quiet`` seconds without one."""
        deadline = time.monotonic() + self.timeout
        seen = False
        while True:
            while self._events:
                ev = self._events.pop(0)
                if ev.get("sessionId") != session:
                    continue
                method, params = ev.get("method"), ev.get("params", {})
                if method == "Page.javascriptDialogOpening":
                    dialogs.append(f"{params.get('type')}: {params.get('message')}")
                    self.send("Page.handleJavaScriptDialog", {"accept": True}, session)
                elif method == "Runtime.exceptionThrown":
                    exceptions.append(json.dumps(params.get("exceptionDetails", {}))[:500])
                seen = seen or method == until
            try:
                self._events.append(self._message(min(deadline, time.monotonic() + quiet) if seen else deadline))
            except TimeoutError:
                if seen:
                    return
                raise

    def load(self, page: Path, expressions: tuple[str, ...] = (), quiet: float = 0.3) -> PageRun:
        """Open ``page`` in a new tab, wait for its load event and ``quiet`` more seconds, evaluate
        ``expressions`` (JavaScript) in it, and report."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        try:
            for domain in ("Page", "Runtime"):
                self.send(f"{domain}.enable", session=session)
            dialogs: list[str] = []
            exceptions: list[str] = []
            self.send("Page.navigate", {"url": page.as_uri()}, session)
            self._drain(session, dialogs, exceptions, "Page.loadEventFired", quiet)

            def value(expression: str) -> Any:
                got = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
                return got["result"].get("value")

            return PageRun(dialogs, exceptions, value("document.body.innerText"), {e: value(e) for e in expressions})
        finally:
            self.send("Target.closeTarget", {"targetId": target})
