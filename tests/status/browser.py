"""A real headless Chromium (Debian's ``chromium``), driven over the DevTools protocol.

Started with ``--remote-debugging-port=0``; the websocket address it prints
on stderr is dialled with aiohttp (already a dependency), so no browser
automation package and no browser download are needed. A ``Browser`` opens
one page (target) at a time: navigate, evaluate JavaScript, take
screenshots; one Chromium serves page after page, so it starts once.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

START_TIMEOUT = 60.0
"""Seconds Chromium may take to start on a loaded machine."""
COMMAND_TIMEOUT = 60.0
WIDTH, HEIGHT = 1280, 900
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "status"
"""Where screenshots are kept (gitignored)."""


def chromium_path() -> str:
    """The browser, or a skip (locally) / failure (under ``CI=true``) when it is missing."""
    found = shutil.which("chromium")
    if found is None:
        message = "chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


class Browser:
    """One headless Chromium process and the page open in it (see ``page``)."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.session_id = ""
        self._ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command to the page (the browser, outside ``page``); await its answer."""
        number = next(self._ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params}
        if self.session_id:
            message["sessionId"] = self.session_id
        await self.ws.send_json(message)
        async with asyncio.timeout(COMMAND_TIMEOUT):
            while True:
                reply = await self.ws.receive_json()
                if reply.get("id") == number:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    result: dict[str, Any] = reply.get("result", {})
                    return result

    @contextlib.asynccontextmanager
    async def page(self) -> AsyncIterator[Browser]:
        """A new page with a 1280x900 window, closed after: nothing carries to the next."""
        target = await self.send("Target.createTarget", url="about:blank")
        attached = await self.send(
            "Target.attachToTarget", targetId=target["targetId"], flatten=True
        )
        self.session_id = attached["sessionId"]
        try:
            await self.send(
                "Emulation.setDeviceMetricsOverride",
                width=WIDTH,
                height=HEIGHT,
                deviceScaleFactor=1,
                mobile=False,
            )
            yield self
        finally:
            self.session_id = ""
            await self.send("Target.closeTarget", targetId=target["targetId"])

    async def authorize(self, key: str) -> None:
        """Send ``key`` as a bearer header with every request of the page."""
        await self.send("Network.enable")
        await self.send("Network.setExtraHTTPHeaders", headers={"Authorization": f"Bearer {key}"})

    async def goto(self, url: str) -> None:
        """Load ``url`` and wait until its document is complete."""
        await self.send("Page.enable")
        await self.send("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'")

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 60.0) -> Any:
        """Poll ``expression`` until it is truthy; fail after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = await self.evaluate(expression)
            if value:
                return value
            assert time.monotonic() < deadline, f"never true in {timeout:g} s: {expression}"
            await asyncio.sleep(0.1)

    async def screenshot(self, name: str) -> Path:
        """Save the page as ``tests/artifacts/status/<name>.png``; print and return the path."""
        shot = await self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        path.write_bytes(base64.b64decode(shot["data"]))
        print(f"status page screenshot: {path}")
        return path


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """A headless Chromium, ended (and its profile removed) after; pages come from ``page``."""
    binary = chromium_path()
    profile = tempfile.mkdtemp(prefix="laneway-chromium-")
    process = _launch(binary, profile)
    try:
        address = await asyncio.to_thread(_devtools_address, process)
        async with aiohttp.ClientSession() as http, http.ws_connect(address, max_msg_size=0) as ws:
            yield Browser(ws)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        assert process.stderr is not None
        for thread in threading.enumerate():
            if thread.name == f"chromium-stderr-{process.pid}":
                thread.join(timeout=10)
        process.stderr.close()
        shutil.rmtree(profile, ignore_errors=True)


def _launch(binary: str, profile: str) -> subprocess.Popen[str]:
    """Start Chromium headless, its DevTools on a free loopback port, its profile in ``profile``."""
    return subprocess.Popen(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _devtools_address(process: subprocess.Popen[str]) -> str:
    """Read Chromium's stderr until it prints its DevTools websocket address."""
    assert process.stderr is not None
    deadline = time.monotonic() + START_TIMEOUT
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            if process.poll() is not None:
                raise RuntimeError("chromium exited: " + "".join(seen[-20:]))
            continue
        seen.append(line)
        found = re.search(r"DevTools listening on (ws://\S+)", line)
        if found:
            _drain(process)
            return found.group(1)
    raise RuntimeError("chromium did not start in time: " + "".join(seen[-20:]))


def _drain(process: subprocess.Popen[str]) -> None:
    """Keep reading Chromium's stderr so a full pipe never blocks it."""
    assert process.stderr is not None
    stream = process.stderr
    name = f"chromium-stderr-{process.pid}"
    threading.Thread(target=lambda: [None for _ in stream], name=name, daemon=True).start()


async def poll(condition: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    """Await ``condition`` every 0.1 s until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        await asyncio.sleep(0.1)
