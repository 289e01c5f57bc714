"""``toolpath ui`` served for real: the app on 127.0.0.1 (uvicorn in a thread, a free port) over a store, a
headless Chromium driven by Playwright (Debian's chromium, never a downloaded one), and stores to serve: the demo's,
and a large one bulk-inserted with SQLAlchemy Core."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_process
from toolpath.cli.common import load_agent
from toolpath.store import schema as t
from toolpath.store.store import Store

DEMO_AGENT = "toolpath.demo.smart_home:smart_home_agent"
EXITING_AGENT = "tests.helpers.ui:exiting_agent"
SLOW_AGENT = "tests.helpers.ui:slow_agent"
JOB_ENDED = "() => location.pathname.startsWith('/runs/') || (document.getElementById('job-error') || {}).textContent"
"""True in a job page once the run's page opened or the job page shows why the run failed."""


def exiting_agent(prompt: str) -> str:
    """An agent whose code calls ``sys.exit``: SystemExit is no ``Exception``, and ends a thread silently."""
    raise SystemExit(f"the agent gave up on {prompt!r}")


def slow_agent(prompt: str) -> str:
    """An agent that takes two seconds: its job page polls several times before the run ends."""
    time.sleep(2.0)
    return f"done: {prompt}"


def demo_store(folder: Path) -> str:
    """A SQLite store filled by ``toolpath demo`` (run as a real process, so its tracing stays there)."""
    result = run_process(folder, "demo", "--store", "sqlite:///demo.db")
    assert result.returncode == 0, result.stderr
    return f"sqlite:///{folder / 'demo.db'}"


@contextlib.contextmanager
def serve_ui(store: Store, evalsets: Path, *, token: str | None = None) -> Iterator[str]:
    """The UI over ``store`` on a free port of 127.0.0.1; yields its base URL."""
    import uvicorn

    from toolpath.ui import create_app

    app = create_app(store, evalsets=evalsets, load_agent=load_agent, token=token)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the UI server did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


def chromium_binary() -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run must install it (apt-get install -y chromium)")
        pytest.skip("chromium not found (apt-get install -y chromium)")
    return binary


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    """A headless Chromium (Playwright over the system's chromium binary)."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    binary = chromium_binary()
    with playwright_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=binary, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield launched
        finally:
            launched.close()


class Watched:
    """A page whose console errors, uncaught exceptions and dialogs (alert, confirm) are recorded."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

        def dialog(d: Any) -> None:
            self.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)


def screenshot_folder(base: Path) -> Path:
    """Where the browser tests save their screenshots ($TOOLPATH_UI_SCREENSHOTS, else under pytest's temp)."""
    folder = Path(os.environ.get("TOOLPATH_UI_SCREENSHOTS") or base / "ui-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshots(page: Any, folder: Path, name: str) -> list[Path]:
    """Full-page screenshots of the current page at 1280 and 1920 px wide."""
    taken = []
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        path = folder / f"{name}-{width}.png"
        page.screenshot(path=str(path), full_page=True)
        taken.append(path)
    page.set_viewport_size({"width": 1280, "height": 900})
    return taken


def bulk_store(url: str, invocations: int, *, per_session: int = 5) -> Store:
    """A store of ``invocations`` invocations in sessions of ``per_session``, one tool call each, every tenth
    failed, every fourth scored online; inserted with SQLAlchemy Core in one transaction."""
    store = Store(url)
    start = 1_780_000_000 * 10**9
    sessions, rows, calls, scores = [], [], [], []
    for n in range(invocations):
        session = n // per_session
        at = start + n * 1_000_000_000
        if n % per_session == 0:
            sessions.append(
                {"session_id": f"s{session:06d}", "agent_name": f"agent-{session % 3}", "first_started_at": at,
                 "last_started_at": at + (per_session - 1) * 1_000_000_000}
            )  # fmt: skip
        rows.append(
            {"invocation_id": f"i{n:07d}", "session_id": f"s{session:06d}", "trace_id": f"{n:032x}",
             "agent_name": f"agent-{session % 3}", "prompt": f"request {n} about the {'kitchen' if n % 7 else 'garage'}",
             "response": f"done {n}", "intermediate_responses": [], "latency_seconds": 0.5, "failure": int(n % 10 == 0),
             "error": "ValueError: no" if n % 10 == 0 else None, "started_at": at, "attributes": {}}
        )  # fmt: skip
        calls.append(
            {"invocation_id": f"i{n:07d}", "position": 0, "name": "lookup", "args": {"n": n}, "result": {"ok": True},
             "call_id": f"c{n}", "error": None, "start_time": at, "end_time": at + 100_000_000}
        )  # fmt: skip
        if n % 4 == 0:
            scores.append(
            {"invocation_id": f"i{n:07d}", "metric": "trajectory_precision", "score": (n % 5) / 4,
             "label": "pass" if n % 5 == 4 else "fail", "explanation": None, "worker": "w", "created_at": at}
        )  # fmt: skip
    with store.engine.begin() as conn:  # the driver's executemany: JSON columns given as their text
        for table, rows_of in ((t.sessions, sessions), (t.invocations, rows), (t.tool_calls, calls),
                               (t.online_results, scores)):  # fmt: skip
            columns = list(rows_of[0])
            marks = ", ".join("?" for _ in columns)
            values = [tuple(_column(row[c]) for c in columns) for row in rows_of]
            conn.exec_driver_sql(f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})", values)
    return store


def _column(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, dict | list) else value
