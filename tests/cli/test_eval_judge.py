"""`toolpath eval` with judge metrics and judge criteria, the judge configured by the environment only."""

from __future__ import annotations

import json

from tests.helpers.cli import run_cli
from tests.helpers.fake_gemini import FakeGemini, Reply, json_reply


def script(prompt: str, seen: int) -> Reply:
    if "is_the_agent_response_valid" in prompt:
        return json_reply(reasoning="same facts", is_the_agent_response_valid="valid")
    return json_reply(score=5, explanation="clear and fluent")


def test_dataset_mixes_computation_and_judge_metrics(tmp_path):
    rows = [
        {"prompt": "hi", "response": "Hello there.", "reference": "Hello there."},
        {"prompt": "weather?", "response": "Sunny, 20C.", "reference": "It is sunny."},
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    fake = FakeGemini(script)
    with fake.running():
        env = {"GOOGLE_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": fake.url}
        result = run_cli(
            tmp_path, "eval", "data.jsonl", "--metrics", "exact_match,fluency(num_samples=3)", "--output", "out.json",
            "--store", "sqlite:///s.db", env=env,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr  # exact_match's mean misses its pass mark
        assert "FAILED exact_match: mean 0.500, needed ≥ 1 (its pass mark)" in result.stdout.splitlines()
        out = json.loads((tmp_path / "out.json").read_text())
        assert [r["exact_match/score"] for r in out["metrics_table"]] == [1.0, 0.0]
        assert [r["fluency/score"] for r in out["metrics_table"]] == [5.0, 5.0]
        assert out["metrics_table"][0]["fluency/explanation"] == "clear and fluent"
        assert out["judge_usage"]["requests"] == 6
        assert "judge: 6 request(s)" in result.stdout
        assert fake.requests == 6
        # re-scoring the same dataset asks nothing: the store caches the judge's replies
        again = run_cli(tmp_path, "eval", "data.jsonl", "--metrics", "fluency(num_samples=3)", "--store", "sqlite:///s.db",
                    env=env)  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert fake.requests == 6 and "6 from the cache" in again.stdout
        # --no-cache asks the model again, and keeps nothing
        fresh = run_cli(tmp_path, "eval", "data.jsonl", "--metrics", "fluency(num_samples=3)", "--store", "sqlite:///s.db",
                    "--no-cache", env=env)  # fmt: skip
        assert fresh.returncode == 0, fresh.stderr
        assert fake.requests == 12 and "judge: 6 request(s), 0 from the cache" in fresh.stdout


def test_eval_set_with_a_judge_criterion(tmp_path):
    (tmp_path / "agent.py").write_text(
        "def answer(prompt: str) -> str:\n    return 'Hello! I can tell you the weather.'\n"
    )
    cases = [{"query": "hi", "expected_tool_use": [], "reference": "Hello! I can tell you the weather."}]
    (tmp_path / "hi.test.json").write_text(json.dumps(cases))
    config = {"criteria": {"final_response_match_v2": {"threshold": 0.8, "judge_model_options": {"num_samples": 3}}}}
    (tmp_path / "test_config.json").write_text(json.dumps(config))
    fake = FakeGemini(script)
    with fake.running():
        env = {"GOOGLE_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": fake.url}
        result = run_cli(tmp_path, "eval", "hi.test.json", "--agent", "agent:answer", "--output", "out.json", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    [case] = json.loads((tmp_path / "out.json").read_text())["eval_cases"]
    metric = case["metrics"]["final_response_match_v2"]
    assert (case["status"], metric["score"], metric["status"]) == ("PASSED", 1.0, "PASSED")
    assert fake.requests == 3


def test_judge_metric_without_credentials_exits_2(tmp_path):
    (tmp_path / "data.jsonl").write_text(json.dumps({"prompt": "hi", "response": "Hello."}) + "\n")
    env = {"GOOGLE_API_KEY": "", "GEMINI_API_KEY": "", "GOOGLE_GENAI_USE_VERTEXAI": ""}
    result = run_cli(tmp_path, "eval", "data.jsonl", "--metrics", "fluency", env=env)
    assert result.returncode == 2
    assert "error:" in result.stderr and "GOOGLE_API_KEY" in result.stderr
