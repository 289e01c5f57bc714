"""No traced run is lost silently when the process is told to stop or forks (``toolpath.process_events``): an
application killed by SIGTERM keeps every run it traced; runs traced in ``multiprocessing`` workers forked after
``toolpath.init()`` — however the pool ends — and in a prefork server's workers (gunicorn) reach the store."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.collector import free_port

AGENT = """
import os, sys, time
import toolpath

toolpath.init(os.environ["STORE"])

@toolpath.tool
def look(x: str) -> str:
    return x

@toolpath.agent(name="forked")
def agent(prompt: str) -> str:
    look(prompt)
    return "ok " + prompt

def task(i):
    return agent(f"p{i}", session_id=f"s{i}")
"""


def stored(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("select count(*) from invocations").fetchone()[0])


def run_script(folder: Path, body: str, *args: str) -> subprocess.CompletedProcess[str]:
    (folder / "forked_agent.py").write_text(AGENT)
    (folder / "main.py").write_text("from forked_agent import *\n" + textwrap.dedent(body))
    env = {**os.environ, "STORE": f"sqlite:///{folder / 's.db'}", "PYTHONPATH": str(folder)}
    return subprocess.run([sys.executable, "main.py", *args], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


POOLS = {
    "pool ended by its with-block (terminate: its workers get SIGTERM)": """
        import multiprocessing as mp
        with mp.get_context("fork").Pool(2) as pool:
            pool.map(task, range(10))
        """,
    "pool closed and joined (its workers leave by os._exit)": """
        import multiprocessing as mp
        pool = mp.get_context("fork").Pool(2)
        pool.map(task, range(10))
        pool.close()
        pool.join()
        """,
    "a process each": """
        import multiprocessing as mp
        processes = [mp.get_context("fork").Process(target=task, args=(i,)) for i in range(10)]
        for p in processes:
            p.start()
        for p in processes:
            p.join()
        """,
}


@pytest.mark.parametrize("body", POOLS.values(), ids=POOLS.keys())
def test_runs_traced_in_forked_workers_are_stored(tmp_path, body):
    for attempt in range(3):  # the race a pool's end makes, tried more than once
        (tmp_path / "s.db").unlink(missing_ok=True)
        done = run_script(tmp_path, 'agent("parent", session_id="parent")\n' + textwrap.dedent(body))
        assert done.returncode == 0, done.stderr
        assert stored(tmp_path / "s.db") == 11, f"attempt {attempt + 1}: {done.stderr}"
        assert "Traceback" not in done.stderr


def test_an_application_killed_by_sigterm_keeps_every_run(tmp_path):
    (tmp_path / "forked_agent.py").write_text(AGENT)
    (tmp_path / "main.py").write_text(
        "from forked_agent import *\nfor i in range(50):\n    task(i)\nprint('ran', flush=True)\ntime.sleep(60)\n"
    )
    env = {**os.environ, "STORE": f"sqlite:///{tmp_path / 's.db'}", "PYTHONPATH": str(tmp_path)}
    process = subprocess.Popen([sys.executable, "main.py"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "ran\n"
    process.send_signal(signal.SIGTERM)  # within the collector's drain interval: nothing written yet, maybe
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGTERM  # it still dies of SIGTERM, as it would have
    assert stored(tmp_path / "s.db") == 50


def test_an_application_with_its_own_sigterm_handler_keeps_it(tmp_path):
    done = run_script(
        tmp_path,
        """
        import signal
        signal.signal(signal.SIGTERM, lambda *_: print("mine"))
        toolpath.shutdown()
        toolpath.init(os.environ["STORE"])  # set up after the application's own handler: it stays
        print(signal.getsignal(signal.SIGTERM).__name__)
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "<lambda>"


WSGI = """
from forked_agent import agent

def app(environ, start_response):
    answer = agent(environ["PATH_INFO"].strip("/"), session_id=environ["PATH_INFO"].strip("/"))
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [answer.encode()]
"""


def test_runs_traced_in_a_prefork_servers_workers_are_stored(tmp_path):
    pytest.importorskip("gunicorn")
    (tmp_path / "forked_agent.py").write_text(AGENT)
    (tmp_path / "wsgi_app.py").write_text(WSGI)
    port = free_port()
    env = {**os.environ, "STORE": f"sqlite:///{tmp_path / 's.db'}", "PYTHONPATH": str(tmp_path)}
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "--workers",
        "2",
        "--bind",
        f"127.0.0.1:{port}",
        "--preload",
        "wsgi_app:app",
    ]  # fmt: skip  (--preload: toolpath.init() in the master, before the fork)
    server = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        answers = []
        for i in range(20):
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/r{i}", timeout=10) as reply:
                        answers.append(reply.read())
                    break
                except OSError:
                    assert time.monotonic() < deadline, "gunicorn did not answer"
                    time.sleep(0.1)
        assert answers == [f"ok r{i}".encode() for i in range(20)]
    finally:
        server.send_signal(signal.SIGTERM)  # a graceful stop: the workers finish and leave
        _, err = server.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()
    assert stored(tmp_path / "s.db") == 20
