"""The store's password is never shown: not by any command that prints the store's URL, not in a store error (a
wrong password, an unreachable server), not in a log line, whether the URL came from ``--store`` or
``$TOOLPATH_STORE``. Against a real PostgreSQL server that checks passwords."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import make_url

import toolpath
from tests.helpers.cli import run_cli
from tests.helpers.collector import Collector, free_port
from tests.helpers.pgserver import postgres_server
from toolpath.errors import ConfigError
from toolpath.store.store import Store, display_url

PASSWORD = "pgS3cretPW42"


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A PostgreSQL server whose TCP connections need ``PASSWORD``; the URL carries it."""
    with postgres_server().controlled(password=PASSWORD) as cluster:
        yield cluster.url


@pytest.fixture(scope="module")
def wrong_url(pg_url) -> str:
    return make_url(pg_url).set(password="WrongPW-77x").render_as_string(hide_password=False)


UNREACHABLE = f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:1/toolpath"


def shown(pg_url: str) -> str:
    return f"postgres:***@127.0.0.1:{make_url(pg_url).port}"


def assert_hidden(*texts: str) -> None:
    for text in texts:
        assert PASSWORD not in text and "WrongPW-77x" not in text, text


def test_display_url_hides_the_password_wherever_the_url_holds_it():
    assert display_url("postgresql+psycopg://me:s3cret-xy@db:5432/t") == "postgresql+psycopg://me:***@db:5432/t"
    assert display_url("postgresql://me@db/t?password=s3cret-xy&sslmode=require") == (
        "postgresql://me@db/t?password=***&sslmode=require"
    )
    assert display_url("sqlite:///data/toolpath.db") == "sqlite:///data/toolpath.db"
    with pytest.raises(ConfigError) as raised:
        Store("host=db user=me password=s3cret-xy", create=False)
    assert "s3cret-xy" not in str(raised.value) and "password=***" in str(raised.value)


@pytest.mark.parametrize("through_env", [False, True])
def test_commands_that_print_the_store_url_hide_its_password(tmp_path, pg_url, through_env):
    def run(*args: str):
        if through_env:
            return run_cli(tmp_path, *args, env={"TOOLPATH_STORE": pg_url})
        return run_cli(tmp_path, *args, "--store", pg_url)

    upgraded = run("db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    current = run("db", "current")
    assert current.returncode == 0, current.stderr
    assert shown(pg_url) in upgraded.stdout and shown(pg_url) in current.stdout
    Store(pg_url).write()  # the store is reachable with the real password: the engine kept it
    # an empty store: the errors that name it
    evaluated = run("eval", "--from-store", "--metrics", "trajectory_exact_match")
    exported = run("export", "--format", "jsonl", "--output", str(tmp_path / "out.jsonl"))
    run_missing = run("report", "--run", "no-such-run", "--html", str(tmp_path / "r.html"))
    for result in (evaluated, exported, run_missing):
        assert result.returncode == 2 and shown(pg_url) in result.stderr, result.stderr
    listed = run("sessions", "list")
    assert listed.returncode == 0, listed.stderr
    assert_hidden(upgraded.stdout, current.stdout, evaluated.stderr, exported.stderr, run_missing.stderr, listed.stdout)


@pytest.mark.parametrize("bad", ["wrong password", "unreachable"])
def test_store_errors_hide_the_password(tmp_path, wrong_url, bad):
    url = wrong_url if bad == "wrong password" else UNREACHABLE
    results = [
        run_cli(tmp_path, "db", "current", "--store", url),
        run_cli(tmp_path, "db", "upgrade", "--store", url),
        run_cli(tmp_path, "sessions", "list", "--store", url),
        run_cli(tmp_path, "sessions", "show", "s1", env={"TOOLPATH_STORE": url}),
        run_cli(tmp_path, "report", "--store", url, "--run", "r1", "--html", str(tmp_path / "r.html")),
    ]
    for result in results:
        assert result.returncode == 2, result
        assert result.stderr.startswith("error: store postgresql+psycopg://postgres:***@127.0.0.1:"), result.stderr
        assert "cannot open" in result.stderr and len(result.stderr.splitlines()) == 1
        assert_hidden(result.stdout, result.stderr)
    if bad == "wrong password":
        assert "password authentication failed" in results[0].stderr


def test_collect_start_up_line_and_error_hide_the_password(tmp_path, pg_url, wrong_url):
    collector = Collector(tmp_path, pg_url).start()
    try:
        assert collector.first_line.startswith("toolpath collecting"), collector.first_line
    finally:
        collector.stop()
        # read through the text streams: communicate() would skip what readline() buffered
        out, err = collector.process.stdout.read(), collector.process.stderr.read()
    start_up = " ".join((collector.first_line + out).split())  # the console wraps at 80 columns
    assert shown(pg_url) in start_up, start_up
    assert_hidden(start_up, err)
    port = str(free_port())
    refused = run_cli(tmp_path, "collect", "--store", wrong_url, "--http-port", port, "--grpc-port", "0")
    assert refused.returncode == 2 and "password authentication failed" in refused.stderr
    assert_hidden(refused.stdout, refused.stderr)


def test_tracing_into_an_unavailable_store_logs_no_password(tmp_path, wrong_url, caplog):
    caplog.set_level(logging.DEBUG, logger="toolpath")
    toolpath.init(store=wrong_url)

    @toolpath.agent(name="echo")
    def echo(prompt: str) -> str:
        return prompt

    echo("hello")
    assert not toolpath.flush(timeout=10)  # the invocation could not be stored: counted, and logged
    toolpath.shutdown()
    assert "password authentication failed" in caplog.text
    assert "postgres:***@" in caplog.text  # the retry names the store, without its password
    assert_hidden(caplog.text)
