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
    def __init__(self, profile: Path, width: int = 1400, height: int = 1000) -> None:
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

        self.ws = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
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
                raise AssertionError(f"timed out waiting for {expression!r}; page text: {text[:2000]}")
            time.sleep(0.5)

    def click_text(self, selector: str, text: str, timeout: float = 60) -> None:
        """Click the first ``selector`` element whose visible text is exactly ``text`` (once it exists)."""
        js = (
            f"(() => {{ const e = [...document.querySelectorAll({json.dumps(selector)})]"
            f".find(e => e.innerText.trim() === {json.dumps(text)}); if (e) {{ e.click(); return true; }}"
            f" return false; }})()"
        )
        self.wait_for(js, timeout)

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
