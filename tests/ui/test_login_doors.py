"""``toolpath ui``'s port as its command serves it (the UI, evaluateInstances in front, uvicorn under the door's
rules) on 127.0.0.1, talked to in raw HTTP: the login redirect stays on this host, the cookie names a server-side
session that expires (a clock is injected), is replaced at each login and revoked at logout, a copy of it replayed
from another origin or port is refused, and the Host header must name this very server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.doors import Reply, closed, door, dribble, send
from toolpath.cli.ui_command import build_ui, ui_port_app
from toolpath.store.store import Store
from toolpath.store.usage import prices
from toolpath.ui.login_sessions import LoginSessions, SessionPolicy

TOKEN = "tok-" + "Qw7" * 10
IDLE, LIFETIME = 3600.0, 4 * 3600.0


class Clock:
    """The sessions' time, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Ui:
    def __init__(self, port: int, clock: Clock, store: Store) -> None:
        self.port, self.clock, self.store = port, clock, store
        self.host = f"127.0.0.1:{port}"
        self.origin = f"http://{self.host}"
        self.cookie_name = f"toolpath_ui_session_{port}"

    def get(self, target: str, cookie: str | None = None, **headers: str) -> Reply:
        return send(self.port, "GET", target, self._headers(cookie, headers))

    def post(self, target: str, body: str, cookie: str | None = None, **headers: str) -> Reply:
        extra = {"Content-Type": "application/x-www-form-urlencoded", **headers}
        return send(self.port, "POST", target, self._headers(cookie, extra), body.encode())

    def login(self, cookie: str | None = None) -> str:
        reply = self.get(f"/sessions?token={TOKEN}", cookie)
        assert reply.status == 303, reply
        return session_of(reply, self.cookie_name)

    def _headers(self, cookie: str | None, headers: dict[str, str]) -> dict[str, str]:
        given = {"Host": self.host, **{k.replace("_", "-"): v for k, v in headers.items()}}
        if cookie is not None:
            given["Cookie"] = f"{self.cookie_name}={cookie}"
        return given


def session_of(reply: Reply, name: str) -> str:
    [cookie] = reply.all("set-cookie")
    assert cookie.startswith(f"{name}="), cookie
    return cookie.split(";", 1)[0].split("=", 1)[1]


def attributes(reply: Reply) -> dict[str, str]:
    [cookie] = reply.all("set-cookie")
    parts = [p.strip() for p in cookie.split(";")[1:]]
    return {k.lower(): v for k, _, v in (p.partition("=") for p in parts)}


def serve(tmp_path: Path, *, behind_tls: bool = False, **serving: Any) -> Any:
    store = Store(f"sqlite:///{tmp_path / 'ui.db'}")
    clock = Clock()
    sessions = LoginSessions(SessionPolicy(IDLE, LIFETIME, 3), clock=clock)
    app = build_ui(
        store, evalsets=tmp_path / "evalsets", token=TOKEN, loopback_only=True, behind_tls=behind_tls, sessions=sessions
    )
    app = ui_port_app(app, store, token=TOKEN, loopback_only=True)
    return store, clock, door(app, **serving)


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[Ui]:
    store, clock, served = serve(tmp_path)
    try:
        with served as port:
            yield Ui(port, clock, store)
    finally:
        store.close()


@pytest.mark.parametrize(
    ("target", "location"),
    [
        ("//evil.test/x", "/evil.test/x"),
        ("///evil.test", "/evil.test"),
        ("/%2F%2Fevil.test", "/evil.test"),
        ("/\\evil.test", "/evil.test"),
        ("/%5C%5Cevil.test/x", "/evil.test/x"),
        ("/%09/evil.test", "/%09/evil.test"),
        ("/sessions", "/sessions"),
    ],
)
def test_the_login_redirects_to_a_path_of_this_host_only(ui: Ui, target: str, location: str) -> None:
    reply = ui.get(f"{target}?token={TOKEN}&q=a")
    assert reply.status == 303
    assert reply.header("location") == f"{location}?q=a"


def test_the_cookie_names_a_session_not_the_token_and_has_its_attributes(ui: Ui) -> None:
    reply = ui.get(f"/sessions?token={TOKEN}")
    session = session_of(reply, ui.cookie_name)
    assert TOKEN not in reply.all("set-cookie")[0] and len(session) >= 40
    assert attributes(reply) == {"httponly": "", "max-age": str(int(LIFETIME)), "path": "/", "samesite": "strict"}
    assert ui.get("/sessions", session).status == 200
    assert ui.get("/sessions", session + "x").status == 401
    assert ui.get("/sessions", "a" * 5000).status == 401


def test_behind_tls_the_cookie_is_secure_and_changes_come_from_https_pages(tmp_path: Path) -> None:
    store, _, served = serve(tmp_path, behind_tls=True)
    try:
        with served as port:
            ui = Ui(port, Clock(), store)
            reply = ui.get(f"/sessions?token={TOKEN}")
            assert "secure" in attributes(reply)
            session = session_of(reply, ui.cookie_name)
            form = "model=m&input=1&output=2"
            assert ui.post("/prices", form, session, Origin=ui.origin).status == 403  # http: not the UI's origin
            assert ui.post("/prices", form, session, Origin=f"https://{ui.host}").status == 303
    finally:
        store.close()


def test_over_plain_http_the_cookie_is_not_secure_but_over_tls_it_is(ui: Ui) -> None:
    assert "secure" not in attributes(ui.get(f"/sessions?token={TOKEN}"))
    # uvicorn takes the scheme from a proxy on loopback (X-Forwarded-Proto): the request came over TLS
    assert "secure" in attributes(ui.get(f"/sessions?token={TOKEN}", X_Forwarded_Proto="https"))


def test_a_session_ends_when_idle_and_at_its_lifetime(ui: Ui) -> None:
    session = ui.login()
    for _ in range(3):  # used within the idle time, it lasts
        ui.clock.now += IDLE - 1
        assert ui.get("/sessions", session).status == 200
    ui.clock.now += IDLE + 1  # unused for longer than the idle time
    assert ui.get("/sessions", session).status == 401
    session = ui.login()
    opened = ui.clock.now
    while ui.clock.now + IDLE / 2 < opened + LIFETIME:
        ui.clock.now += IDLE / 2
        assert ui.get("/sessions", session).status == 200
    ui.clock.now = opened + LIFETIME + 1  # used all along, it still ends at its lifetime
    assert ui.get("/sessions", session).status == 401


def test_each_login_gets_a_new_session_and_ends_the_one_it_came_with(ui: Ui) -> None:
    first = ui.login()
    second = ui.login(cookie=first)
    assert second != first
    assert ui.get("/sessions", first).status == 401  # a cookie set before a login (fixation) is dead after it
    assert ui.get("/sessions", second).status == 200
    wrong = ui.get("/sessions?token=not-it", second)  # a link with a wrong token opens nothing, cookie or not
    assert wrong.status == 401 and wrong.all("set-cookie") == []
    assert ui.get("/sessions", second).status == 200


def test_past_the_bound_the_oldest_session_ends(ui: Ui) -> None:
    sessions = []
    for _ in range(4):  # the bound is 3
        sessions.append(ui.login())
        ui.clock.now += 1
    assert [ui.get("/sessions", s).status for s in sessions] == [401, 200, 200, 200]


def test_logout_revokes_the_session_and_clears_the_cookie(ui: Ui) -> None:
    session, other = ui.login(), ui.login()
    assert ui.post("/logout", "", session).status == 403  # a change: from the app's own pages only
    reply = ui.post("/logout", "", session, Origin=ui.origin)
    assert reply.status == 200 and b"logged out" in reply.body
    assert attributes(reply)["max-age"] == "0" and session_of(reply, ui.cookie_name) in ('""', "")
    assert ui.get("/sessions", session).status == 401
    assert ui.get("/sessions", other).status == 200  # another browser's login stays
    page = ui.get("/sessions", other)
    assert b'action="/logout"' in page.body


def test_a_copied_cookie_replayed_from_another_origin_or_port_changes_nothing(ui: Ui) -> None:
    session = ui.login()
    form = "model=stolen&input=1&output=2"
    other = "127.0.0.1:1"
    assert ui.post("/prices", form, session, Host=other, Origin=f"http://{other}").status == 421
    assert ui.post("/prices", form, session, Origin=f"http://{other}").status == 403  # a page of another port
    assert ui.post("/prices", form, session, Origin=f"https://{ui.host}").status == 403  # another scheme
    assert ui.post("/prices", form, session, Origin="null").status == 403
    assert ui.post("/prices", form, session, Referer=f"http://{other}/x").status == 403
    assert ui.post("/prices", form, session, Referer=f"http://{ui.host}@evil.test/").status == 403
    assert ui.post("/prices", form, session).status == 403  # neither Origin nor Referer
    assert "stolen" not in prices(ui.store)
    assert ui.post("/prices", form, session, Referer=f"{ui.origin}/prices").status == 303  # the app's own page
    assert "stolen" in prices(ui.store)


@pytest.mark.parametrize(
    ("host", "status"),
    [("{here}@evil.test", 400), ("127.0.0.1:1", 421), ("evil.test", 421), ("evil.test:{port}", 421),
     ("127.0.0.1", 421), ("", 400), ("localhost:{port}", 401), ("{here}", 401)],
)  # fmt: skip
def test_the_host_must_name_this_very_server(ui: Ui, host: str, status: int) -> None:
    given = host.format(here=ui.host, port=ui.port)
    assert ui.get("/sessions", Host=given).status == status  # 401: served, and asks for the token
    api = "/v1beta1/projects/p/locations/us-central1:evaluateInstances"  # the Vertex AI API on the same port
    reply = send(ui.port, "POST", api, {"Host": given, "Content-Type": "application/json"}, b"{}")
    assert reply.status == status


def test_dribbled_heads_are_closed_at_the_deadline_and_connections_are_capped(tmp_path: Path) -> None:
    store, _, served = serve(tmp_path, header_seconds=1.0, max_connections=20)
    try:
        with served as port:
            ui = Ui(port, Clock(), store)
            held = dribble(port, 19)
            try:
                assert ui.get("/sessions").status == 503  # the cap: the twentieth connection is turned away
                time.sleep(2.0)  # past the head deadline
                assert all(closed(conn) for conn in held)
                assert ui.get("/sessions").status == 401  # served again
            finally:
                for conn in held:
                    conn.close()
    finally:
        store.close()
