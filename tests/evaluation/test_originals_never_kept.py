"""An evaluation scores the values the agent produced, before redaction; nothing computed from them keeps them.

The agent logs in with one password and the case expects another: the verdict is computed on the two real values
(they differ: 0.0), and neither password — as it is or JSON-escaped — is in the store (its file and write-ahead log),
the ``--output`` file, the HTML report, the console, or the judge cache."""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path

from tests.helpers.cli import run_cli
from toolpath.judges.client import Judge, JudgeReply, JudgeRequest, JudgeSettings
from toolpath.store.store import Store

GOT = "pw-Canary-Got-4417"
WANTED = 'pw-Canary-"Wanted"-9923'
"""The case's password; the quotes make its JSON-escaped form differ from it."""
CANARIES = (GOT, WANTED, json.dumps(WANTED)[1:-1], "Canary-Got", "Canary-\\")

AGENT = f"""
import toolpath

@toolpath.tool
def login(user: str, password: str) -> str:
    return "welcome " + user

def answer(prompt):
    return login("ada", {GOT!r})
"""


def leaks(folder: Path) -> list[str]:
    """``file: canary`` for every canary found in any file under ``folder`` (the store's WAL and SHM included)."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix != ".py" and path.name != "cases.jsonl":
            data = path.read_bytes()
            found += [f"{path.name}: {c}" for c in CANARIES if c.encode() in data]
    return found


def test_an_explanation_quoting_both_passwords_keeps_neither(tmp_path):
    (tmp_path / "login_agent.py").write_text(AGENT)
    case = {
        "prompt": "log in as ada",
        "reference_trajectory": [{"tool_name": "login", "tool_input": {"user": "ada", "password": WANTED}}],
    }
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    result = run_cli(
        tmp_path, "eval", "cases.jsonl", "--agent", "login_agent:answer", "--store", "sqlite:///s.db",
        "--metrics", "trajectory_exact_match,tool_argument_similarity,trajectory_precision", "--output", "out.json",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # the case fails: the passwords differ
    row = json.loads((tmp_path / "out.json").read_text())["metrics_table"][0]
    assert row["trajectory_exact_match/score"] == 0.0  # the real passwords differ, though both store as [REDACTED]
    assert row["tool_argument_similarity/score"] < 1.0  # user matches, password does not
    explanation = row["trajectory_exact_match/explanation"]
    assert "login password" in explanation and "got" in explanation  # still says what differed
    report = run_cli(tmp_path, "report", "--store", "sqlite:///s.db", "--html", "report.html")
    assert report.returncode == 0, report.stderr
    shown = run_cli(tmp_path, "runs", "show", "--store", "sqlite:///s.db")
    printed = result.stdout + result.stderr + report.stdout + report.stderr + shown.stdout + shown.stderr
    assert [c for c in CANARIES if c in printed] == []
    assert leaks(tmp_path) == []
    assert [c for c in CANARIES if c in ui_pages(tmp_path / "s.db")] == []


def ui_pages(db: Path) -> str:
    """Every page of the UI that shows the run: the runs list, the run, each of its turns and their traces."""
    from starlette.testclient import TestClient

    from toolpath.ui import create_app

    store = Store(f"sqlite:///{db}")
    try:
        client = TestClient(create_app(store, evalsets=db.parent / "evalsets"), base_url="http://127.0.0.1:8765")
        pages = [client.get("/runs"), client.get("/sessions")]
        for run_id in re.findall(r'href="/runs/([^"?#]+)"', pages[0].text):
            pages.append(client.get(f"/runs/{run_id}"))
        for link in re.findall(r'href="(/(?:turn|traces|session)[^"#]*)"', " ".join(p.text for p in pages)):
            pages.append(client.get(html.unescape(link)))
        assert all(page.status_code == 200 for page in pages) and len(pages) > 4
        return " ".join(page.text for page in pages)
    finally:
        store.close()


class QuotingBackend:
    """A judge model whose reply quotes the prompt it was given."""

    async def generate(self, request: JudgeRequest, timeout: float) -> JudgeReply:
        return JudgeReply(json.dumps({"score": 1, "explanation": f"the user said {request.prompt}"}), None, 5, 5)


def test_the_judge_cache_keeps_no_secret_its_reply_quoted(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'cache.db'}")
    judge = Judge(JudgeSettings(), cache=store, backend=QuotingBackend())

    async def work(ask):
        return await ask(JudgeRequest(f"my password={GOT} and key sk-canaryAPIKEY0123456789abcdefXYZ"))

    reply = judge.run(work)
    assert GOT in (reply.text or "")  # the caller gets the model's reply as it was
    rows = store.judge_replies([JudgeRequest(f"my password={GOT} and key sk-canaryAPIKEY0123456789abcdefXYZ")
                                .cache_key()])  # fmt: skip
    (cached,) = rows.values()
    assert GOT not in cached["reply"] and "sk-canary" not in cached["reply"] and "[REDACTED]" in cached["reply"]
    assert json.loads(cached["reply"])["score"] == 1  # still a reply the judge's parser reads
    store.close()
    assert [c for c in (GOT, "sk-canaryAPIKEY") if any(c.encode() in p.read_bytes() for p in tmp_path.iterdir())] == []
    asyncio.set_event_loop(None)
