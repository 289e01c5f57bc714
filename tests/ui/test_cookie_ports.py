"""The UI's cookie, as a real browser sends it: another server on another port of 127.0.0.1 receives this host's
cookies (cookies ignore ports), so what it receives must never be the token."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.helpers.ui import browser, serve_ui
from toolpath.store.store import Store

TOKEN = "tok-" + "Zq8" * 10


def test_a_listener_on_another_port_never_receives_the_token(tmp_path):
    seen: list[str] = []

    class Listener(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Cookie") or "")
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"other")

        def log_message(self, *args: object) -> None:
            pass

    other = ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        with serve_ui(store, tmp_path / "evalsets", token=TOKEN) as base, browser() as chromium:
            page = chromium.new_page()
            page.goto(f"{base}/sessions?token={TOKEN}")  # the login link: the UI sets its cookie
            assert page.url == f"{base}/sessions"
            page.goto(f"http://127.0.0.1:{other.server_address[1]}/")
            page.goto(f"{base}/sessions")  # still logged in: the cookie is a session
            assert "Sessions" in page.content()
    finally:
        other.shutdown()
        store.close()
    assert seen and "toolpath_ui_session_" in seen[0]  # the browser did send this host's cookie to the other port
    assert TOKEN not in "".join(seen)
