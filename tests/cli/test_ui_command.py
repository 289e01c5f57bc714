"""`toolpath ui` and `toolpath collect --ui`: bad input is one error line and exit 2, before anything listens; the
collector serves the UI's pages beside OTLP on one port."""

from __future__ import annotations

import json
import time
import urllib.request
from urllib.error import HTTPError

from tests.helpers.builders import otlp_json
from tests.helpers.cli import run_cli
from toolpath.cli.ui_command import build_ui
from toolpath.collector.http import HttpServer
from toolpath.collector.ingestor import Ingestor
from toolpath.store.store import Store


def test_ui_on_a_missing_store_is_one_error_line(tmp_path):
    result = run_cli(tmp_path, "ui", "--store", "sqlite:///missing.db")
    assert result.returncode == 2
    assert result.stderr.startswith("error: store missing.db does not exist")
    assert not (tmp_path / "missing.db").exists()


def test_ui_with_a_bad_port_is_a_usage_error(tmp_path):
    result = run_cli(tmp_path, "ui", "--port", "70000")
    assert result.returncode == 2 and "error:" in result.stderr


def test_collect_ui_off_loopback_needs_a_token(tmp_path):
    result = run_cli(tmp_path, "collect", "--ui", "--host", "0.0.0.0", "--store", "sqlite:///c.db")
    assert result.returncode == 2
    assert "--ui off loopback needs --token" in result.stderr


def test_the_collector_serves_the_ui_beside_otlp(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    app = build_ui(store, evalsets=tmp_path / "evalsets", token="t0k", loopback_only=True)
    server = HttpServer(Ingestor(store, token="t0k"), "127.0.0.1", 0, other=app).start()
    try:
        deadline = time.monotonic() + 10
        while not server.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        base = f"http://127.0.0.1:{server.port}"
        auth = {"Authorization": "Bearer t0k"}
        post = urllib.request.Request(
            f"{base}/v1/traces", otlp_json("ab" * 16, 2), {**auth, "Content-Type": "application/json"}, method="POST"
        )
        assert urllib.request.urlopen(post, timeout=10).status == 200
        assert json.loads(urllib.request.urlopen(f"{base}/healthz", timeout=10).read()) == {"status": "ok"}
        page = urllib.request.urlopen(urllib.request.Request(f"{base}/sessions", headers=auth), timeout=10)
        assert page.status == 200 and "data-session=" in page.read().decode()
        try:
            urllib.request.urlopen(f"{base}/sessions", timeout=10)
            raise AssertionError("the UI answered without its token")
        except HTTPError as exc:
            assert exc.code == 401
    finally:
        server.shutdown()
        store.close()


def test_with_the_ui_on_probes_and_scrapes_still_answer_and_no_log_line_holds_the_token(tmp_path):
    import subprocess
    import sys

    from tests.helpers.collector import free_port

    token, port = "tok-" + "x7" * 12, free_port()
    log = (tmp_path / "collector.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "toolpath.cli", "collect", "--store", f"sqlite:///{tmp_path / 'c.db'}", "--ui",
         "--http-port", str(port), "--grpc-port", "0", "--token", token, "--log-format", "json"],
        stdout=log, stderr=log,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert urllib.request.urlopen(f"{base}/readyz", timeout=10).status == 200
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, (tmp_path / "collector.log").read_text()
                time.sleep(0.1)
        scrape = urllib.request.Request(f"{base}/metrics", headers={"Authorization": f"Bearer {token}"})
        assert b"toolpath_" in urllib.request.urlopen(scrape, timeout=10).read()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        page = opener.open(f"{base}/sessions?token={token}", timeout=10)  # the login link: 303, then the page
        assert page.status == 200
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
    logged = (tmp_path / "collector.log").read_text()
    assert "/sessions" in logged  # the access log is on, and says which page was asked for
    assert token not in logged


def test_collect_ui_without_a_token_makes_one_up_and_prints_its_login_link(tmp_path):
    import re
    import subprocess
    import sys

    from tests.helpers.collector import free_port

    port = free_port()
    out = (tmp_path / "out.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "toolpath.cli", "collect", "--store", f"sqlite:///{tmp_path / 'c.db'}", "--ui",
         "--http-port", str(port), "--grpc-port", "0"],
        stdout=out, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while "toolpath ui on" not in (tmp_path / "out.log").read_text():
            assert time.monotonic() < deadline and process.poll() is None, (tmp_path / "out.log").read_text()
            time.sleep(0.1)
        change = urllib.request.Request(
            f"{base}/evalsets/add", b"session_id=s&new_evalset=x", {"Origin": base}, method="POST"
        )
        try:
            urllib.request.urlopen(change, timeout=10)
            raise AssertionError("a change was accepted without a credential")
        except HTTPError as exc:
            assert exc.code == 401
        [link] = re.findall(r"toolpath ui on (\S+)", (tmp_path / "out.log").read_text())
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        assert opener.open(link, timeout=10).status == 200
    finally:
        process.terminate()
        process.wait(timeout=30)
        out.close()


def test_toolpath_ui_refuses_a_huge_request_head_and_still_serves(tmp_path):
    import socket
    import subprocess
    import sys

    from tests.helpers.collector import free_port

    Store(f"sqlite:///{tmp_path / 'u.db'}").close()
    port = free_port()
    out = (tmp_path / "out.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "toolpath.cli", "ui", "--store", f"sqlite:///{tmp_path / 'u.db'}", "--port", str(port)],
        stdout=out, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "toolpath ui on" not in (tmp_path / "out.log").read_text():
            assert time.monotonic() < deadline and process.poll() is None, (tmp_path / "out.log").read_text()
            time.sleep(0.1)
        time.sleep(0.5)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            host = f"Host: 127.0.0.1:{port}\r\n".encode()  # this very server: the size alone is refused
            conn.sendall(b"GET /sessions HTTP/1.1\r\n" + host + b"X-Big: " + b"a" * 100 * 1024 + b"\r\n\r\n")
            reply = conn.recv(1024)
        assert reply == b"" or reply.split(b" ", 2)[1] in (b"400", b"431")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/sessions", timeout=10)
        except HTTPError as exc:
            assert exc.code == 401  # still serving: the token is what it asks for
    finally:
        process.terminate()
        process.wait(timeout=30)
        out.close()


def test_ui_session_options_are_checked_before_anything_listens(tmp_path):
    for args, message in (
        (["--session-idle", "0s"], "error: --session-idle '0s': must be more than zero"),
        (["--session-lifetime", "soon"], "error: --session-lifetime 'soon': not a duration"),
        (["--session-idle", "8d"], "error: --session-idle: longer than --session-lifetime"),
        (["--max-sessions", "0"], "--max-sessions"),
    ):
        result = run_cli(tmp_path, "ui", "--store", "sqlite:///u.db", *args)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)
    assert not (tmp_path / "u.db").exists()


def test_collect_behind_tls_needs_the_ui(tmp_path):
    result = run_cli(tmp_path, "collect", "--behind-tls", "--store", "sqlite:///c.db")
    assert result.returncode == 2 and "error: --behind-tls applies to --ui only" in result.stderr


def test_collect_ui_workers_share_logins_and_logouts(tmp_path):
    """Connections are dealt to the workers in turn: a login at one is a login at all, a logout at one at all."""
    import subprocess
    import sys

    from tests.helpers.collector import free_port
    from tests.helpers.doors import send

    token, port = "tok-" + "w9" * 12, free_port()
    log = (tmp_path / "collector.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "toolpath.cli", "collect", "--store", f"sqlite:///{tmp_path / 'c.db'}", "--ui",
         "--http-port", str(port), "--grpc-port", "0", "--token", token, "--workers", "2", "--behind-tls"],
        stdout=log, stderr=log,
    )  # fmt: skip
    host = {"Host": f"127.0.0.1:{port}"}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10).status == 200
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, (tmp_path / "collector.log").read_text()
                time.sleep(0.1)
        login = send(port, "GET", f"/sessions?token={token}", host)
        [cookie] = login.all("set-cookie")
        assert login.status == 303 and "Secure" in cookie
        jar = {**host, "Cookie": cookie.split(";")[0]}
        assert [send(port, "GET", "/sessions", jar).status for _ in range(4)] == [200] * 4  # each worker in turn
        out = send(port, "POST", "/logout", {**jar, "Origin": f"https://127.0.0.1:{port}"})
        assert out.status == 200
        assert [send(port, "GET", "/sessions", jar).status for _ in range(4)] == [401] * 4
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
