"""`toolpath eval SET --from-store` and `--from-spans FILE`: an eval set scored against recorded traffic gives the
numbers the live `--agent` run of that traffic gave, case by case — for a function agent, a LangGraph agent whose
first turn raises, and an ADK agent on a scripted model — recorded by toolpath's store and by the OpenTelemetry
Collector's file format (the SDK's own OTLP export, written as the Collector's file exporter writes it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import ADK_FIXTURES, crashing
from tests.helpers.adk_agent import write_agent_package
from tests.helpers.cli import run_cli
from tests.helpers.trace_files import CollectorFileSink
from tests.helpers.weather import WEATHER_AGENT_MODULE


def recorded_live(cwd: Path, evalset: str, agent: str, *extra: str) -> tuple[int, dict]:
    """A live run of ``agent`` over ``evalset`` into ``s.db``, its spans also exported over OTLP to a
    Collector-style file sink (``traces.jsonl``)."""
    sink = CollectorFileSink(cwd / "traces.jsonl")
    try:
        env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": sink.url, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}
        live = run_cli(cwd, "eval", evalset, "--agent", agent, "--store", "s.db", "--output", "live.json", *extra,
                       env=env)  # fmt: skip
    finally:
        sink.close()
    assert (cwd / "traces.jsonl").exists(), live.stdout + live.stderr
    return live.returncode, json.loads((cwd / "live.json").read_text())


def judged(output: dict) -> dict:
    """Per case: status, error, each criterion's score, per-invocation scores and statuses, and the efficiency
    figures (from the same spans)."""
    return {
        (c["eval_set_id"], c["eval_id"]): (
            c["status"],
            c.get("error"),
            {
                n: (m["score"], m["status"], m["per_invocation"], m["per_invocation_status"])
                for n, m in c["metrics"].items()
            },
            c.get("efficiency"),
        )
        for c in output["eval_cases"]
    }


def rescored(cwd: Path, evalset: str, *args: str) -> tuple[int, dict, str]:
    result = run_cli(cwd, "eval", evalset, *args, "--output", "again.json")
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result.returncode, json.loads((cwd / "again.json").read_text()), result.stdout


@pytest.mark.parametrize("agent", ["good", "wrong"])
def test_a_function_agent_recorded_scores_as_its_live_run(tmp_path, agent):
    for f in ADK_FIXTURES.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "weather_agent.py").write_text(WEATHER_AGENT_MODULE)
    code, live = recorded_live(tmp_path, ".", f"weather_agent:{agent}")
    assert code == (0 if agent == "good" else 1)
    for source in (("--from-store", "--store", "s.db"), ("--from-spans", "traces.jsonl")):
        again_code, again, stdout = rescored(tmp_path, ".", *source)
        assert judged(again) == judged(live), source
        assert again_code == code and "paired 2 of 2 case(s) with 2 recorded session(s)" in stdout
        assert {p["paired_by"] for p in again["pairings"]} == {"session id"}
    # trace files ingested into a store holding other runs of the same set pair with the files' sessions only
    run_cli(tmp_path, "eval", ".", "--agent", f"weather_agent:{agent}", "--store", "s.db")
    again_code, again, stdout = rescored(tmp_path, ".", "--from-spans", "traces.jsonl", "--store", "s.db")
    assert again_code == code and judged(again) == judged(live)
    assert "paired 2 of 2 case(s) with 2 recorded session(s) of 2" in stdout


def test_a_langgraph_agent_whose_turn_raised_fails_its_recorded_case_as_live(tmp_path):
    crashing.crash_evalset(tmp_path)
    (tmp_path / "crash_agents.py").write_text(
        "from tests.helpers import crashing\n\nlanggraph = crashing.build('langgraph')\n"
    )
    code, live = recorded_live(tmp_path, "crash.evalset.json", "crash_agents:langgraph")
    [case] = live["eval_cases"]
    assert code == 1 and case["status"] == "FAILED" and case["error"].startswith("turn 1: the agent failed")
    for source in (("--from-store", "--store", "s.db"), ("--from-spans", "traces.jsonl")):
        again_code, again, _ = rescored(tmp_path, "crash.evalset.json", *source)
        assert (again_code, judged(again)) == (1, judged(live)), source


def test_an_adk_agent_recorded_by_toolpath_collect_scores_as_its_live_run(tmp_path):
    from tests.helpers.collector import serving
    from toolpath.store.store import Store

    package = write_agent_package(tmp_path)
    collected = Store(f"sqlite:///{tmp_path / 'collected.db'}")
    with serving(collected) as service:  # the agent's spans also go over OTLP to a collector of their own
        env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{service.options.http_port}/v1/traces"}
        live = run_cli(tmp_path, "eval", "home.evalset.json", "--agent", package.name, "--store", "s.db",
                       "--output", "live.json", env=env)  # fmt: skip
    assert live.returncode == 0, live.stdout + live.stderr
    code, again, _ = rescored(tmp_path, "home.evalset.json", "--from-store", "--store", "collected.db")
    assert (code, judged(again)) == (0, judged(json.loads((tmp_path / "live.json").read_text())))


def test_an_adk_agent_recorded_scores_as_its_live_run(tmp_path):
    package = write_agent_package(tmp_path)
    code, live = recorded_live(tmp_path, "home.evalset.json", package.name)
    assert code == 0, live
    for source in (("--from-store", "--store", "s.db"), ("--from-spans", "traces.jsonl")):
        again_code, again, _ = rescored(tmp_path, "home.evalset.json", *source)
        assert (again_code, judged(again)) == (0, judged(live)), source


@pytest.fixture
def recorded_twice(tmp_path) -> Path:
    """The weather eval set run live twice into ``s.db``: each case has two recorded sessions."""
    for f in ADK_FIXTURES.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "weather_agent.py").write_text(WEATHER_AGENT_MODULE)
    for _ in range(2):
        ran = run_cli(tmp_path, "eval", "weather.evalset.json", "--agent", "weather_agent:good", "--store", "s.db")
        assert ran.returncode == 0, ran.stdout + ran.stderr
    return tmp_path


def test_a_case_with_several_sessions_is_not_evaluated_unless_each_is_scored(recorded_twice):
    code, out, stdout = rescored(recorded_twice, "weather.evalset.json", "--from-store", "--store", "s.db")
    [case] = out["eval_cases"]
    assert code == 1 and case["status"] == "NOT_EVALUATED"
    [pairing] = out["pairings"]
    assert pairing["not_evaluated"].startswith("2 recorded sessions pair by session id (eval-")
    assert f"NOT EVALUATED {case['eval_set_id']}/{case['eval_id']}: 2 recorded sessions" in stdout
    assert "1 case(s): 0 passed, 0 failed, 1 not evaluated" in stdout
    code, out, stdout = rescored(recorded_twice, "weather.evalset.json", "--from-store", "--store", "s.db", "--each")
    [case] = out["eval_cases"]
    assert code == 0 and case["status"] == "PASSED" and len(case["sessions"]) == 2
    assert [run["score"] for run in case["metrics"]["tool_trajectory_avg_score"]["runs"]] == [1.0, 1.0]


def test_cases_pair_by_user_text_and_unpaired_ones_are_listed(recorded_twice):
    golden = json.loads((recorded_twice / "weather.evalset.json").read_text())
    [case] = golden["eval_cases"]
    case["eval_id"] = "golden_weather"  # no session carries this id: only the user's text can pair it
    case["conversation"][0]["user_content"]["parts"][0]["text"] = "  Hi!"
    unknown = json.loads(json.dumps(case))
    unknown["eval_id"] = "what_time"
    unknown["conversation"][0]["user_content"]["parts"][0]["text"] = "What time is it?"
    golden["eval_cases"].append(unknown)
    (recorded_twice / "golden.evalset.json").write_text(json.dumps(golden))
    code, out, stdout = rescored(recorded_twice, "golden.evalset.json", "--from-store", "--store", "s.db",
                                 "--match", "normalized", "--each")  # fmt: skip
    by_id = {c["eval_id"]: c for c in out["eval_cases"]}
    assert code == 1  # a case not evaluated: the exit code says so
    assert by_id["golden_weather"]["status"] == "PASSED" and len(by_id["golden_weather"]["sessions"]) == 2
    assert by_id["what_time"]["status"] == "NOT_EVALUATED"
    reason = "no recorded session with id 'what_time' or whose user turns are the case's (normalized match)"
    assert f"NOT EVALUATED {golden['eval_set_id']}/what_time: {reason}" in stdout
    assert by_id["what_time"]["metrics"]["tool_trajectory_avg_score"]["explanation"] == reason
    assert {p["eval_id"]: p["paired_by"] for p in out["pairings"]} == {"golden_weather": "user text", "what_time": None}
    # exact text: "  Hi!" is not what the user typed
    code, out, _ = rescored(
        recorded_twice, "golden.evalset.json", "--from-store", "--store", "s.db", "--match", "exact"
    )
    assert code == 1 and {c["status"] for c in out["eval_cases"]} == {"NOT_EVALUATED"}
    # without --match, only ids pair, and the reason says how to pair by text
    code, out, stdout = rescored(recorded_twice, "golden.evalset.json", "--from-store", "--store", "s.db")
    assert code == 1 and "give --match normalized to pair by the user's text" in stdout


def test_recorded_sessions_narrowed_by_attribute_and_time(recorded_twice):
    code, out, stdout = rescored(recorded_twice, "weather.evalset.json", "--from-store", "--store", "s.db",
                                 "--since", "2999-01-01")  # fmt: skip
    assert code == 1 and "paired 0 of 1 case(s) with 0 recorded session(s) of 0" in stdout
    code, out, stdout = rescored(recorded_twice, "weather.evalset.json", "--from-store", "--store", "s.db",
                                 "--session-attribute", "deployment=canary")  # fmt: skip
    assert code == 1 and out["eval_cases"][0]["status"] == "NOT_EVALUATED"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("weather.evalset.json", "--match", "normalized"),
            "--match, --each, --session-attribute and --otlp-endpoint apply",
        ),
        (("weather.evalset.json", "--from-store", "--from-spans", "t.jsonl"), "give --from-store"),
        (("cases.jsonl", "--from-spans", "t.jsonl"), "--from-spans with a DATASET scores an eval set"),
        (("weather.evalset.json", "--from-store", "--agent", "a:b"), "--from-store scores recorded traffic by"),
        (("weather.evalset.json", "--from-spans", "missing.jsonl"), "missing.jsonl: cannot read"),
        (("weather.evalset.json", "--from-store", "--session-attribute", "x"), "--session-attribute 'x'"),
        (("weather.evalset.json", "--from-store", "--otlp-endpoint", "collector:4318"), "--otlp-endpoint 'collector"),
    ],
)
def test_bad_recorded_options_are_one_error_before_anything(tmp_path, args, message):
    for f in ADK_FIXTURES.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "cases.jsonl").write_text("{}\n")
    result = run_cli(tmp_path, "eval", *args, "--store", "s.db", "--output", "o.json")
    assert result.returncode == 2 and result.stderr.startswith(f"error: {message}"), result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "o.json").exists()


def test_results_go_out_as_evaluation_events_parented_to_the_recorded_spans(recorded_twice):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    from toolpath.store.store import Store

    events = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/v1/logs":
                request = ExportLogsServiceRequest.FromString(body)
                events.extend(r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        code, out, stdout = rescored(recorded_twice, "weather.evalset.json", "--from-store", "--store", "s.db", "--each",
                                     "--otlp-endpoint", url)  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert code == 0 and "sent 8 gen_ai.evaluation.result event(s)" in stdout  # 2 sessions x 2 turns x 2 criteria
    assert len(events) == 8 and {e.event_name for e in events} == {"gen_ai.evaluation.result"}
    store = Store("sqlite:///" + str(recorded_twice / "s.db"))
    spans = {(inv.trace_id, inv.invocation_id.rsplit("-", 1)[1]) for inv in store.list_invocations()}
    assert {(e.trace_id.hex(), e.span_id.hex()) for e in events} == spans
    attributes = [{kv.key: kv.value for kv in e.attributes} for e in events]
    assert {a["gen_ai.evaluation.name"].string_value for a in attributes} == {"tool_trajectory_avg_score",
                                                                            "response_match_score"}  # fmt: skip
    assert {a["gen_ai.evaluation.score.label"].string_value for a in attributes} == {"pass"}
    assert [case["eval_id"] for case in out["eval_cases"]] == ["legacy/weather.test.json"]


def test_since_narrows_recorded_invocations_scored_by_metrics(recorded_twice):
    late = run_cli(recorded_twice, "eval", "--from-store", "--store", "s.db", "--metrics", "tool_call_count",
                   "--since", "2999-01-01")  # fmt: skip
    assert late.returncode == 2 and "no recorded invocations" in late.stderr
    early = run_cli(recorded_twice, "eval", "--from-store", "--store", "s.db", "--metrics", "tool_call_count",
                    "--since", "2000-01-01", "--output", "o.json")  # fmt: skip
    assert early.returncode == 0, early.stdout + early.stderr
    assert json.loads((recorded_twice / "o.json").read_text())["summary_metrics"]["row_count"] == 4
