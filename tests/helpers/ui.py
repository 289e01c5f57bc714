"""``toolpath ui`` served for real: the app on 127.0.0.1 (uvicorn in a thread, a free port) over a store, a
headless Chromium driven by Playwright (Debian's chromium, never a downloaded one), and stores to serve: the demo's,
and a large one bulk-inserted with SQLAlchemy Core."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_process
from toolpath.cli.agents import load_agent
from toolpath.store import schema as t
from toolpath.store import turn_text, turn_usage
from toolpath.store.store import Store

DEMO_AGENT = "toolpath.demo.smart_home:smart_home_agent"
EXITING_AGENT = "tests.helpers.ui:exiting_agent"
HELD_AGENT = "tests.helpers.ui:held_agent"
CRASHING_AGENT = "tests.helpers.crashing:crashing_agent"
JOB_ENDED = "() => location.pathname.startsWith('/runs/') || (document.getElementById('job-error') || {}).textContent"
"""True in a job page once the run's page opened or the job page shows why the run failed."""


def exiting_agent(prompt: str) -> str:
    """An agent whose code calls ``sys.exit``: SystemExit is no ``Exception``, and ends a thread silently."""
    raise SystemExit(f"the agent gave up on {prompt!r}")


GATE = threading.Event()
"""Holds :func:`held_agent` (the UI runs it in this process) until a test opens it."""


def held_agent(prompt: str) -> str:
    """An agent that answers once ``GATE`` is open (at most a minute later): its run stays in progress for as long
    as a test needs, whatever the machine's speed."""
    GATE.wait(60)
    return f"done: {prompt}"


def demo_store(folder: Path) -> str:
    """A SQLite store filled by ``toolpath demo`` (run as a real process, so its tracing stays there)."""
    result = run_process(folder, "demo", "--store", "sqlite:///demo.db")
    assert result.returncode == 0, result.stderr
    return f"sqlite:///{folder / 'demo.db'}"


def ui_agents() -> dict[str, object]:
    """The agents the tests' UIs are started with (as ``toolpath ui --agent`` would load them)."""
    return {name: load_agent(name) for name in (DEMO_AGENT, EXITING_AGENT, HELD_AGENT, CRASHING_AGENT)}


@contextlib.contextmanager
def serve_ui(store: Store, evalsets: Path, *, token: str | None = None) -> Iterator[str]:
    """The UI over ``store`` on a free port of 127.0.0.1; yields its base URL."""
    import uvicorn

    from toolpath.ui import create_app

    app = create_app(store, evalsets=evalsets, agents=ui_agents(), token=token)
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


@contextlib.contextmanager
def watched_page(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A Chromium page of ``width`` × ``height`` px; on leaving, no console error or uncaught exception may
    have happened on it."""
    with browser() as chromium:
        watched = Watched(chromium.new_page(viewport={"width": width, "height": height}))
        yield watched.page
        assert watched.errors == []


def announced_screenshot_folder(base: Path) -> Path:
    """:func:`screenshot_folder`, printed so that a ``-s`` run says where to look."""
    folder = screenshot_folder(base)
    print(f"\nUI screenshots: {folder}")
    return folder


def screenshot_folder(base: Path) -> Path:
    """Where the browser tests save their screenshots ($TOOLPATH_UI_SCREENSHOTS, else under pytest's temp)."""
    folder = Path(os.environ.get("TOOLPATH_UI_SCREENSHOTS") or base / "ui-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshots(page: Any, folder: Path, name: str, widths: Iterable[int] = (1280, 1920)) -> list[Path]:
    """Full-page screenshots of the current page at each of ``widths`` (px)."""
    taken = []
    for width in widths:
        page.set_viewport_size({"width": width, "height": 900})
        path = folder / f"{name}-{width}.png"
        page.screenshot(path=str(path), full_page=True)
        taken.append(path)
    page.set_viewport_size({"width": 1280, "height": 900})
    return taken


def bulk_store(url: str, invocations: int, *, per_session: int = 5, model_spans: bool = False) -> Store:
    """A store of ``invocations`` invocations in sessions of ``per_session``, one tool call each, every tenth
    failed, every fourth scored online (and with ``model_spans``, one model-call span each, with token counts and
    a model, and a user per session of 40 users; every seventh reports its cost); inserted with the driver's executemany, one statement per table in
    one transaction, the rows made as tuples (JSON columns written as their text) straight from generators. SQLite
    or PostgreSQL (an empty store)."""
    store = Store(url)
    start, second = 1_780_000_000 * 10**9, 10**9
    span = (per_session - 1) * second

    def session_of(n: int) -> str:
        return f"s{n // per_session:06d}"

    def agent_of(n: int) -> str:
        return f"agent-{n // per_session % 3}"

    tables: list[tuple[Any, tuple[str, ...], Iterable[tuple[Any, ...]]]] = [
        (
            t.sessions,
            ("session_id", "agent_name", "first_started_at", "last_started_at"),
            (
                (session_of(n), agent_of(n), start + n * second, start + n * second + span)
                for n in range(0, invocations, per_session)
            ),
        ),
        (
            t.invocations,
            ("invocation_id", "session_id", "trace_id", "agent_name", "prompt", "response", "intermediate_responses",
             "latency_seconds", "failure", "error", "started_at", "attributes"),
            (
                (f"i{n:07d}", session_of(n), f"{n:032x}", agent_of(n),
                 f"request {n} about the {'kitchen' if n % 7 else 'garage'}", f"done {n}", "[]", 0.5,
                 int(n % 10 == 0), "ValueError: no" if n % 10 == 0 else None, start + n * second, "{}")
                for n in range(invocations)
            ),
        ),
        (
            t.tool_calls,
            ("invocation_id", "position", "name", "args", "result", "call_id", "error", "start_time", "end_time"),
            (
                (f"i{n:07d}", 0, "lookup", f'{{"n": {n}}}', '{"ok": true}', f"c{n}", None, start + n * second,
                 start + n * second + 100_000_000)
                for n in range(invocations)
            ),
        ),
        (
            t.online_results,
            ("invocation_id", "evaluator", "evaluator_version", "metric", "score", "label", "explanation", "worker",
             "created_at"),
            (
                (f"i{n:07d}", "default", "1", "trajectory_precision", (n % 5) / 4, "pass" if n % 5 == 4 else "fail", None, "w",
                 start + n * second)
                for n in range(0, invocations, 4)
            ),
        ),
    ]  # fmt: skip
    if model_spans:

        def usage(n: int) -> str:
            cost = f', "gen_ai.usage.cost.total": {n % 13 / 1000}' if n % 7 == 0 else ""
            return (f'{{"gen_ai.operation.name": "chat", "gen_ai.request.model": "model-{n % 2}", '
                    f'"gen_ai.usage.input_tokens": {n % 997}, "gen_ai.usage.output_tokens": {n % 89}{cost}}}')  # fmt: skip

        tables.append((
            t.spans,
            ("trace_id", "span_id", "name", "kind", "start_time", "end_time", "status_code", "attributes", "events",
             "resource"),
            ((f"{n:032x}", f"{n:016x}", "chat model", 3, start + n * second, start + n * second + 10**8, 0, usage(n),
              "[]", f'{{"user.id": "user-{n // per_session % 40}"}}') for n in range(invocations)),
        ))  # fmt: skip
    mark = "?" if store.dialect == "sqlite" else "%s"
    with store.engine.begin() as conn:
        for table, columns, rows in tables:
            marks = ", ".join(mark for _ in columns)
            conn.exec_driver_sql(f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})", list(rows))
        if model_spans:  # the rows bypass the write path: each turn's usage and user kept as migration 0011 does
            turn_usage.backfill(conn)
        turn_text.backfill(conn)  # and its text indexed as 0012 does
    return store


def page_overflow(page: Any) -> int:
    """How many pixels the current page is wider than its viewport (0: nothing to scroll sideways)."""
    return int(page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth"))


BROKEN_WORDS = """() => {
  // the header cells whose text breaks inside a word: a text node (a word between <wbr>s) on two lines
  const broken = [];
  document.querySelectorAll("th.metric-name").forEach((th) => {
    th.childNodes.forEach((node) => {
      if (node.nodeType !== Node.TEXT_NODE || !node.textContent.trim()) return;
      const range = document.createRange();
      range.selectNodeContents(node);
      const lines = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
      if (lines.size > 1) broken.push(th.textContent);
    });
  });
  return broken;
}"""
"""JavaScript: the metric headers of a page whose name breaks inside a word."""
