"""A small Chrome DevTools Protocol client over Debian's headless Chromium, for clicking through the Airflow UI.

Chromium is started with a fresh profile and ``--remote-debugging-port=0``; the port it picked is read from the
profile's ``DevToolsActivePort`` file and the page target is driven over a WebSocket (``websockets``, already
installed with Airflow). No browser is downloaded.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

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


PAGE_TEXT = "document.body ? document.body.innerText : ''"


class Browser:
    def __init__(self, profile: Path, width: int = 1400, height: int = 1000, shots: Path | None = None) -> None:
        """``shots``: where a screenshot of the page is saved when a wait times out (a test's tmp dir)."""
        self.shots = shots
        self._failures = 0
        exe = shutil.which("chromium")
        if exe is None:
            pytest.skip("chromium not installed; run: bash scripts/install_chromium.sh")
        self.proc = subprocess.Popen(
            [
                exe,
                *FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.is_file() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise AssertionError("chromium did not open its DevTools port")
            time.sleep(0.2)
        port = int(port_file.read_text().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(t for t in targets if t["type"] == "page")
        from websockets.sync.client import connect

        # no keepalive pings: a test may leave the page idle for long, and a busy machine answers pings late
        self.ws = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30, ping_interval=None).__enter__()
        self._id = 0

    def send(self, method: str, **params: Any) -> dict:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise AssertionError(f"CDP {method}: {msg['error']}")
                return msg.get("result", {})

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60) -> Any:
        """Poll a page expression until it is truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                text = self.evaluate(PAGE_TEXT) or ""
                shot = self.failure_screenshot("timeout")
                raise AssertionError(
                    f"timed out waiting for {expression!r} (screenshot: {shot}); page text: {text[:2000]}"
                )
            time.sleep(0.25)

    def failure_screenshot(self, what: str) -> Path | None:
        """Save the page as it is now into ``shots`` (numbered), if set; never raises."""
        if self.shots is None:
            return None
        self._failures += 1
        try:
            self.shots.mkdir(parents=True, exist_ok=True)
            return self.screenshot(self.shots / f"{what}-{self._failures}.png")
        except Exception:  # the browser may be gone: the original failure is what matters
            return None

    def click(self, element: str, timeout: float = 60) -> None:
        """Click, as a user does (the mouse, at its centre), the element the JS expression ``element`` yields,
        once it exists, is shown, is scrolled into view, has stopped moving (dialogs open with an animation), is
        not disabled and is the topmost element at that point (nothing covers it)."""
        find = (
            f"(() => {{ const e = {element}; if (!e || !e.offsetParent || e.disabled) return null;"
            f" e.scrollIntoView({{block: 'center', inline: 'center'}}); const r = e.getBoundingClientRect();"
            f" const x = r.left + r.width / 2, y = r.top + r.height / 2; const top = document.elementFromPoint(x, y);"
            f" return top && (e.contains(top) || top.contains(e)) ? [x, y] : null; }})()"
        )
        deadline = time.monotonic() + timeout
        last = None
        while True:
            here = self.wait_for(find, max(1.0, deadline - time.monotonic()))
            if here == last:
                break
            last = here
            time.sleep(0.2)
        self.mouse_click(*here)

    def click_text(self, selector: str, text: str, timeout: float = 60, within: str = "document") -> None:
        """Click (see ``click``) the first shown ``selector`` element inside ``within`` (a JS expression for a
        node) whose text is exactly ``text``."""
        self.click(
            f"[...(({within}) || document.createElement('p')).querySelectorAll({json.dumps(selector)})]"
            f".find(e => e.offsetParent && e.innerText.trim() === {json.dumps(text)})",
            timeout,
        )

    def mouse_click(self, x: float, y: float) -> None:
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            extra = {} if kind == "mouseMoved" else {"button": "left", "clickCount": 1}
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def type_text(self, text: str) -> None:
        """Type ``text`` into the focused element (as an input method does: one input event)."""
        self.send("Input.insertText", text=text)

    def press(self, key: str) -> None:
        """Press and release a named key (Tab, Enter, Escape, ...) on the focused element."""
        codes = {"Tab": 9, "Enter": 13, "Escape": 27}
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=codes[key])

    def screenshot(self, png: Path) -> Path:
        png.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"]))
        return png

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
