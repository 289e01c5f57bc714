"""Ctrl-C during `toolpath eval --agent`, in a real process: the first stops new runs, keeps what ran and says so,
in a bounded time; a second stops at once, and what was stored by then stays."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from toolpath.store import schema as t
from toolpath.store.store import Store

AGENT = """
import os, time
import toolpath

@toolpath.tool
def look(x: str) -> str:
    return x

@toolpath.agent(name="slow")
def agent(prompt: str) -> str:
    open(os.path.join("started", prompt), "w").close()
    look(prompt)
    time.sleep(0.1 if prompt.startswith("fast") else float(os.environ["SLOW_SECONDS"]))
    return "done"
"""


def start_eval(folder: Path, prompts: list[str], slow_seconds: float) -> subprocess.Popen[str]:
    (folder / "slow_agent.py").write_text(AGENT)
    (folder / "started").mkdir()
    rows = "".join(json.dumps({"prompt": p, "reference_trajectory": [{"tool_name": "look"}]}) + "\n" for p in prompts)
    (folder / "cases.jsonl").write_text(rows)
    env = {
        **os.environ,
        "SLOW_SECONDS": str(slow_seconds),
        "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]),
        "TOOLPATH_STORE": "",
    }
    command = [sys.executable, "-m", "toolpath.cli", "eval", "cases.jsonl", "--metrics", "trajectory_exact_match"]
    return subprocess.Popen(
        [*command, "--agent", "slow_agent:agent", "--store", "s.db"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: Ctrl-C not ignored, whatever this test process inherited or was left with (an ignored
        # signal stays ignored across exec)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_for_starts(folder: Path, count: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while len(list((folder / "started").iterdir())) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(list((folder / "started").iterdir())) >= count


def stored_invocations(folder: Path) -> int:
    store = Store(f"sqlite:///{folder / 's.db'}", create=False)
    try:
        with store.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(t.invocations)).scalar_one())
    finally:
        store.close()


@pytest.mark.parametrize(
    ("sig", "code", "said"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_the_first_ctrl_c_or_sigterm_starts_no_new_run_and_keeps_what_ran(tmp_path, sig, code, said):
    process = start_eval(tmp_path, [f"slow-{n}" for n in range(24)], slow_seconds=2.0)
    wait_for_starts(tmp_path, 8)  # the first eight run at once
    process.send_signal(sig)  # SIGTERM: what timeout, CI runners, Kubernetes and systemd send
    out, err = process.communicate(timeout=60)
    assert process.returncode == code, out + err
    assert "Traceback" not in err
    assert f"{said}: 8 of 24 agent runs finished (their traces are stored); 0 still running were left, " in err
    assert len(list((tmp_path / "started").iterdir())) == 8  # the sixteen queued never started: not run
    assert stored_invocations(tmp_path) == 8


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_second_ctrl_c_or_sigterm_stops_at_once_and_what_was_stored_stays(tmp_path, sig, code):
    prompts = [f"fast-{n}" for n in range(4)] + [f"slow-{n}" for n in range(20)]
    process = start_eval(tmp_path, prompts, slow_seconds=60.0)
    wait_for_starts(tmp_path, 12)  # four fast runs ended; eight slow ones are running
    process.send_signal(sig)
    time.sleep(2.0)  # the finished runs are written first; then it waits for the running ones
    second = time.monotonic()
    process.send_signal(sig)
    out, err = process.communicate(timeout=60)
    assert time.monotonic() - second < 30  # the running ones (60 s each) were not waited for
    assert process.returncode == code, out + err
    assert "Traceback" not in err
    assert (
        f"{'terminated' if sig == signal.SIGTERM else 'interrupted'}: 4 of 24 agent runs finished (their traces are stored); 8 still running were left, 12 "
        in err
    )
    assert stored_invocations(tmp_path) == 4  # written before the wait the second Ctrl-C cut short
