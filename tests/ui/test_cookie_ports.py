"""The UI's cookie, as a real browser sends it: another server on another port of 127.0.0.1 receives this host's
cookies (cookies ignore ports), so what it receives must never be the token."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.helpers.ui import browser, serve_ui
from toolpath.store.store import Store
from toolpath.store.usage import prices

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


def test_a_page_of_another_port_cannot_post_with_the_cookie_and_logout_ends_the_session(tmp_path):
    """Cookies ignore ports, and SameSite counts another port as the same site: the browser sends the UI's cookie
    with a form a page on another port of 127.0.0.1 submits. Its Origin names that port, and the UI refuses it."""
    posted: list[int] = []

    class Other(BaseHTTPRequestHandler):
        target = ""

        def do_GET(self) -> None:
            page = (
                f'<form id="f" method="post" action="{Other.target}/prices">'
                '<input name="model" value="cross-port"><input name="input" value="1"><input name="output" value="2">'
                '</form><script>document.getElementById("f").submit()</script>'
            )
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page.encode())

        def log_message(self, *args: object) -> None:
            pass

    other = ThreadingHTTPServer(("127.0.0.1", 0), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        with serve_ui(store, tmp_path / "evalsets", token=TOKEN) as base, browser() as chromium:
            Other.target = base
            page = chromium.new_page()
            page.on("response", lambda r: posted.append(r.status) if r.url == f"{base}/prices" else None)
            page.goto(f"{base}/sessions?token={TOKEN}")
            with page.expect_navigation(url=f"{base}/prices"):
                page.goto(f"http://127.0.0.1:{other.server_address[1]}/")
            assert posted == [403] and "cross-site request refused" in page.content()
            assert "cross-port" not in prices(store)
            page.goto(f"{base}/sessions")
            page.click("form.logout button")  # the app's own page: allowed, and the session ends
            assert "logged out" in page.content()
            page.goto(f"{base}/sessions")
            assert "a token is required" in page.content()
    finally:
        other.shutdown()
        store.close()
