"""Redaction never changes a score (issue 31, point 1): a run toolpath executes is scored on what the agent
produced, in memory, while the store holds it redacted; where only stored values exist, references are redacted by
the store's rules first. Arguments, results and answers hold every default redaction class; the scores equal those
of the same run with clean values, and no secret is in the SQLite file's rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import toolpath
from toolpath.adapters.function import agent, tool
from toolpath.evaluation.recorded import recorded_sessions
from toolpath.evaluation.replay import replay_sessions
from toolpath.store.store import Store

SECRETS: dict[str, Any] = {
    "email": "jane.doe@example.com",
    "token": "tok-7f3a9c2e1b",  # by key name
    "api_key": "k-91b2c3d4e5",  # by key name
    "password": "hunter2-Horse",  # by key name
    "authorization": "Basic dXNlcjpwYXNz",  # by key name
    "cookie": "sid=31d4d96e407aad42",  # by key name
    "openai": "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2",
    "google": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "slack": "xoxb-" + "123456789012-abcdefghij",
    "aws": "AKIA" + "IOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "bearer": "Bearer abcdef123456ghijkl",
    "card": "4111 1111 1111 1111",
    "url": "postgresql://me:s3cretPw9@db.internal/x",
    "password_text": "pwd=Tr0ub4dor3x",
    "secret_text": "client_secret=zq8Wv2Lk9Xp4",
}
CARD_NUMBER = 4012888888881881  # a card number given as a JSON number
IN_CLEAR = [
    "jane.doe@example.com",
    "tok-7f3a9c2e1b",
    "k-91b2c3d4e5",
    "hunter2-Horse",
    "dXNlcjpwYXNz",
    "31d4d96e407aad42",
    "A1b2C3d4E5f6G7h8I9j0K1l2",
    "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "4eC39HqLyjWDarjtT1zdp7dc",
    "123456789012-abcdefghij",
    "IOSFODNN7EXAMPLE",
    "dozjgNryP4J3jVmNHl0w5N",
    "abcdef123456ghijkl",
    "4111 1111 1111 1111",
    "4012888888881881",
    "s3cretPw9",
    "Tr0ub4dor3x",
    "zq8Wv2Lk9Xp4",
]
CLEAN: dict[str, Any] = {key: f"plain-{key}" for key in SECRETS}
CLEAN_CARD_NUMBER = 42

_values: dict[str, Any] = dict(CLEAN)
_card: list[int] = [CLEAN_CARD_NUMBER]


@tool
def create_order(customer: dict[str, Any], note: str) -> dict[str, Any]:
    return {"customer": customer, "confirmation": f"sent to {_values['email']} with {_values['jwt']}"}


@tool
def authenticate(token: str, api_key: str, password: str, headers: dict[str, str]) -> dict[str, Any]:
    return {"session": _values["bearer"], "cookie": _values["cookie"], "db": _values["url"]}


@agent
def shop_agent(prompt: str) -> str:
    v = _values
    authenticate(
        token=v["token"],
        api_key=v["api_key"],
        password=v["password"],
        headers={"authorization": v["authorization"], "cookie": v["cookie"]},
    )
    create_order(
        customer={"email": v["email"], "card": v["card"], "card_number": _card[0], v["email"]: "vip"},
        note=" ".join(v[k] for k in ("openai", "google", "github", "stripe", "slack", "aws", "jwt", "bearer", "url")),
    )
    return f"Order for {v['email']} paid with {v['card']}; {v['password_text']} {v['secret_text']} {v['openai']}"


def expected(values: dict[str, Any], card: int) -> dict[str, Any]:
    """The dataset row whose references are exactly what ``shop_agent`` does with ``values``."""
    v = values
    return {
        "prompt": "order for jane",
        "reference": f"Order for {v['email']} paid with {v['card']}; {v['password_text']} {v['secret_text']} "
        f"{v['openai']}",
        "reference_trajectory": [
            {
                "tool_name": "authenticate",
                "tool_input": {
                    "token": v["token"],
                    "api_key": v["api_key"],
                    "password": v["password"],
                    "headers": {"authorization": v["authorization"], "cookie": v["cookie"]},
                },
            },
            {
                "tool_name": "create_order",
                "tool_input": {
                    "customer": {"email": v["email"], "card": v["card"], "card_number": card, v["email"]: "vip"},
                    "note": " ".join(
                        v[k] for k in ("openai", "google", "github", "stripe", "slack", "aws", "jwt", "bearer", "url")
                    ),
                },
            },
        ],
    }


METRICS = ["trajectory_exact_match", "trajectory_in_order_match", "tool_argument_similarity", "response_match_score",
           "exact_match"]  # fmt: skip


def use(secret: bool) -> dict[str, Any]:
    """Make the agent use the secret values (or clean ones); the matching dataset row."""
    _values.clear()
    _values.update(SECRETS if secret else CLEAN)
    _card[0] = CARD_NUMBER if secret else CLEAN_CARD_NUMBER
    return expected(_values, _card[0])


def in_clear(path: Path) -> list[str]:
    """Every secret found in clear in any row of any table of the SQLite file."""
    toolpath.shutdown()
    found: set[str] = set()
    with sqlite3.connect(path) as conn:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                text = " ".join(str(cell) for cell in row)
                found.update(secret for secret in IN_CLEAR if secret in text)
    return sorted(found)


def scores(result: Any) -> dict[str, Any]:
    return {name: result.summary_metrics[f"{name}/mean"] for name in METRICS}


def test_evaluate_runnable_scores_what_the_agent_did(tmp_path: Path) -> None:
    results = {}
    for secret in (False, True):
        db = tmp_path / f"{secret}.db"
        toolpath.init(store=f"sqlite:///{db}")
        row = use(secret)
        results[secret] = toolpath.evaluate([row], METRICS, runnable=shop_agent, store=Store(f"sqlite:///{db}"))
        assert in_clear(db) == []
    assert scores(results[True]) == scores(results[False]) == dict.fromkeys(METRICS, 1.0)
    table = results[True].metrics_table[0]  # what is shown and written is the stored, redacted row
    assert SECRETS["email"] not in str(table["response"]) and SECRETS["token"] not in str(table)


def test_eval_agent_command_scores_what_the_agent_did(tmp_path: Path) -> None:
    import json

    from tests.helpers.cli import run_cli

    outputs = {}
    for secret in (False, True):
        db = tmp_path / f"{secret}.db"
        (tmp_path / "cases.jsonl").write_text(json.dumps(use(secret)) + "\n", encoding="utf-8")
        result = run_cli(
            tmp_path,
            "eval", "cases.jsonl", "--agent", f"{__name__}:shop_agent", "--metrics", ",".join(METRICS),
            "--store", f"sqlite:///{db}", "--output", "out.json", "--quiet",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        written = (tmp_path / "out.json").read_text(encoding="utf-8")
        outputs[secret] = json.loads(written)
        assert in_clear(db) == []
        assert [s for s in IN_CLEAR if s in written + result.stdout] == []
    for name in METRICS:
        assert outputs[True]["summary_metrics"][f"{name}/mean"] == 1.0
        assert outputs[False]["summary_metrics"][f"{name}/mean"] == 1.0


def test_online_scoring_redacts_the_references_by_the_store_s_rules(tmp_path: Path) -> None:
    import json

    means = {}
    for secret in (False, True):
        db = tmp_path / f"{secret}.db"
        golden = tmp_path / f"{secret}.jsonl"
        row = use(secret)
        golden.write_text(json.dumps(row) + "\n", encoding="utf-8")
        config = {"metrics": METRICS, "reference_dataset": str(golden)}
        setup = toolpath.init(store=f"sqlite:///{db}", online=config)
        store, online = setup.store, setup.online
        assert store is not None and online is not None
        shop_agent(row["prompt"])
        assert toolpath.flush()
        assert online.drain(10)
        with store.engine.connect() as conn:
            means[secret] = dict(conn.exec_driver_sql("SELECT metric, score FROM online_results").all())
        assert in_clear(db) == []
    assert means[True] == means[False] == dict.fromkeys(METRICS, 1.0)


def test_replay_compares_the_new_run_with_the_recording_like_with_like(tmp_path: Path) -> None:
    summaries = {}
    for secret in (False, True):
        db = tmp_path / f"{secret}.db"
        row = use(secret)
        toolpath.init(store=f"sqlite:///{db}")
        shop_agent(row["prompt"], session_id=f"s-{secret}")
        assert toolpath.flush()
        store = Store(f"sqlite:///{db}")
        result = replay_sessions(recorded_sessions(store), shop_agent, metrics=METRICS[:4])
        summaries[secret] = {name: result.summary_metrics[f"{name}/mean"] for name in METRICS[:4]}
        assert not result.sessions[0].changed
        assert in_clear(db) == []
    assert summaries[True] == summaries[False] == dict.fromkeys(METRICS[:4], 1.0)


def fallback_agent(prompt: str) -> dict[str, Any]:
    """An agent that reports its own answer and trajectory (what the runner falls back to without tracing)."""
    row = expected(_values, _card[0])
    return {"response": row["reference"], "predicted_trajectory": row["reference_trajectory"]}


def test_a_run_tracing_did_not_deliver_is_scored_clean_and_kept_redacted(tmp_path: Path, monkeypatch: Any) -> None:
    """When tracing cannot deliver the run in time, the runner scores what the agent returned: in memory as it is,
    and in the store redacted like a delivered run."""
    from toolpath.collector.in_process import InProcessCollector

    monkeypatch.setattr(InProcessCollector, "wait_for_invocation", lambda self, key, timeout: None)
    results = {}
    for secret in (False, True):
        db = tmp_path / f"fallback-{secret}.db"
        toolpath.init(store=f"sqlite:///{db}")
        row = use(secret)
        metrics = ["trajectory_exact_match", "response_match_score", "exact_match"]
        results[secret] = toolpath.evaluate([row], metrics, runnable=fallback_agent, store=Store(f"sqlite:///{db}"))
        assert in_clear(db) == []
    for metric in ("trajectory_exact_match", "response_match_score", "exact_match"):
        assert (
            results[True].summary_metrics[f"{metric}/mean"] == results[False].summary_metrics[f"{metric}/mean"] == 1.0
        )
