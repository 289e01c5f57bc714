"""Online evaluation: the in-process workers, the configuration's errors, the collector service sending scores as
OTLP metrics and events, and workers killed mid-batch on PostgreSQL (the job queue itself: tests/store/test_jobs.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from sqlalchemy import text

import toolpath
from tests.helpers.builders import invocation
from tests.helpers.collector import Collector
from tests.helpers.fake_gemini import FakeGemini, Reply
from tests.helpers.otlp_sink import OtlpSink
from tests.helpers.weather import bot
from toolpath.collector.turns import Turns
from toolpath.errors import ConfigError
from toolpath.evaluation.online import OnlineConfig, OnlineEvaluator
from toolpath.evaluation.online.references import References
from toolpath.evaluation.prompt_match import PromptMatch, normalize_prompt
from toolpath.store import schema
from toolpath.store.browse import online_series, session_page
from toolpath.store.job_queue import JobQueue
from toolpath.store.job_status import ResultLabel
from toolpath.store.online_reads import latest_scored
from toolpath.store.store import Store
from toolpath.ui.params import BadRequest, session_filter

GOLDEN = [
    {
        "prompt": "Weather in Paris?",
        "reference_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}],
        "reference": "Sunny in Paris.",
    }
]


def test_in_process_online_scores_with_golden_references(tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in GOLDEN))
    config = {
        "metrics": ["trajectory_exact_match", "tool_call_count", "exact_match"],
        "reference_dataset": str(golden),
        "thresholds": {"tool_call_count": 0},
        "poll_seconds": 0.05,
    }
    tracing = toolpath.init(store=f"sqlite:///{tmp_path / 'agent.db'}", online=config)
    for prompt in ("Weather in Paris?", "  weather in PARIS ", "Weather in Oslo?"):
        bot(prompt)
    toolpath.flush()
    assert tracing.online.drain(20)
    by_prompt = {r["prompt"]: r["scores"] for r in latest_scored(tracing.store)}
    assert by_prompt["Weather in Paris?"]["trajectory_exact_match"] == {
        "score": 1.0,
        "label": "pass",
        "explanation": "every call matches in order",
    }
    # the normalised prompt finds the golden row; this agent then called Oslo, so the trajectory fails
    assert by_prompt["  weather in PARIS "]["trajectory_exact_match"]["score"] == 0.0
    assert by_prompt["  weather in PARIS "]["trajectory_exact_match"]["label"] == "fail"
    # no reference for Oslo: reference metrics are null ("error"), reference-free ones still score
    assert by_prompt["Weather in Oslo?"]["exact_match"]["score"] is None
    assert by_prompt["Weather in Oslo?"]["exact_match"]["label"] == "error"
    assert by_prompt["Weather in Oslo?"]["tool_call_count"] == {
        "score": 1.0,
        "label": "fail",  # at most 0 calls, the config's threshold (lower is better for a count)
        "explanation": by_prompt["Weather in Oslo?"]["tool_call_count"]["explanation"],
    }
    assert tracing.online.stats.scored == 3


def test_idle_workers_poll_the_queue_by_reading_without_the_write_lock(tmp_path):
    """Online workers with nothing to score poll the queue by reads: the store's write lock, which ingest waits
    for, is taken only when a job waits."""
    store = Store(f"sqlite:///{tmp_path / 'idle.db'}")
    held = []

    class Counted:
        def __init__(self, lock):
            self.lock = lock

        def __enter__(self):
            held.append(time.monotonic())
            return self.lock.__enter__()

        def __exit__(self, *exc):
            return self.lock.__exit__(*exc)

    store.write_lock = Counted(store.write_lock)
    online = OnlineEvaluator(store, {"metrics": ["tool_call_count"], "poll_seconds": 0.01, "workers": 2}).start()
    try:
        time.sleep(0.5)  # some fifty polls a worker
        assert held == []
        store.write([invocation(1)])
        assert online.drain(10)
        assert online.stats.scored == 1
        assert len(held) >= 1  # the claim and the results
    finally:
        online.stop()
        store.close()


def test_config_errors_name_the_file_and_key(tmp_path):
    path = tmp_path / "online.toml"
    path.write_text('metrics = ["tool_call_count"]\nsampel_rate = 0.5\n')
    with pytest.raises(ConfigError, match=r"online.toml: unknown key\(s\) sampel_rate"):
        OnlineConfig.load(path)
    path.write_text("metrics = [")
    with pytest.raises(ConfigError, match=r"online\.toml: not valid TOML"):
        OnlineConfig.load(path)
    path.write_text("sample_rate = 0.5\n")
    with pytest.raises(ConfigError, match="'metrics' is required"):
        OnlineConfig.load(path)
    with pytest.raises(ConfigError, match="sample_rate must be between 0 and 1"):
        OnlineConfig(metrics=["tool_call_count"], sample_rate=2)
    assert normalize_prompt("  Weather in PARIS?! ") == "weather in paris"


def test_judge_metrics_without_credentials_refuse_to_start(tmp_path, monkeypatch):
    for variable in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(variable, raising=False)
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    # not a collector that starts without a word and then scores nothing, batch after batch
    with pytest.raises(ConfigError, match="judge metrics need the Gemini API or Vertex AI: set GOOGLE_API_KEY"):
        OnlineEvaluator(store, {"metrics": ["tool_call_count", "fluency"]})
    with pytest.raises(ConfigError, match="thresholds for fluenct, which 'metrics' does not name"):
        OnlineEvaluator(store, {"metrics": ["tool_call_count"], "thresholds": {"fluenct": 4}})


def test_a_failing_judge_labels_its_own_results_error_and_the_rest_are_scored(tmp_path, monkeypatch):
    fake = FakeGemini(lambda prompt, seen: Reply(raw="<html><body>502 Bad Gateway</body></html>"))
    with fake.running():
        monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        store = Store(f"sqlite:///{tmp_path / 's.db'}")
        config = {"metrics": ["tool_call_count", "fluency"], "thresholds": {"tool_call_count": 2}, "poll_seconds": 0.05}
        evaluator = OnlineEvaluator(store, config).start()
        try:
            store.write([invocation(i) for i in range(3)])
            assert evaluator.drain(20)
        finally:
            evaluator.stop()
    assert evaluator.queue.counts() == {"done": 3}  # no job left claimed
    scored = latest_scored(store)
    assert [r["scores"]["tool_call_count"]["label"] for r in scored] == ["pass"] * 3  # at most 2 calls
    fluency = [r["scores"]["fluency"] for r in scored]
    assert all(f["score"] is None and f["label"] == "error" for f in fluency)
    assert "judge request failed: JSONDecodeError" in fluency[0]["explanation"]


# --- the collector service, end to end -------------------------------------------------------------------


class MetricsLogsSink(OtlpSink):
    """The OTLP/HTTP receiver on 127.0.0.1, keeping the metrics and logs it is sent, decoded."""

    def __init__(self) -> None:
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.logs: list[ExportLogsServiceRequest] = []
        super().__init__()

    def post(self, path: str, body: bytes) -> None:
        if path == "/v1/metrics":
            self.metrics.append(ExportMetricsServiceRequest.FromString(body))
        elif path == "/v1/logs":
            self.logs.append(ExportLogsServiceRequest.FromString(body))

    def events(self) -> list:
        return [r for m in self.logs for rl in m.resource_logs for sl in rl.scope_logs for r in sl.log_records]

    def data_points(self, name: str) -> list:
        """The points of ``name`` in the latest export holding it (temporality is cumulative)."""
        for m in reversed(self.metrics):
            points = []
            for rm in m.resource_metrics:
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        if metric.name == name:
                            points.extend(getattr(metric, metric.WhichOneof("data")).data_points)
            if points:
                return points
        return []


AGENT = """
import sys
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
    endpoint=sys.argv[1] + "/v1/traces", headers={"authorization": "Bearer s3cret"})))
trace.set_tracer_provider(provider)
import toolpath

@toolpath.tool
def get_weather(city: str) -> dict:
    return {"city": city, "sky": "sunny"}

@toolpath.agent(name="remote_bot")
def bot(prompt: str) -> str:
    get_weather("Paris")
    return "Sunny in Paris."

for i in range(int(sys.argv[2])):
    bot("Weather in Paris?", session_id=f"s-{i}")
provider.shutdown()
"""


def test_collector_scores_live_traffic_and_sends_otlp_metrics_and_events(tmp_path):
    sink = MetricsLogsSink()
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in GOLDEN))
    (tmp_path / "online.toml").write_text(
        'metrics = ["trajectory_exact_match", "tool_call_count"]\n'
        'reference_dataset = "golden.jsonl"\n'
        f'otlp_endpoint = "{sink.url}"\n'
        "poll_seconds = 0.05\n"
    )
    collector = Collector(tmp_path, None, "--online", str(tmp_path / "online.toml")).start()
    try:
        (tmp_path / "agent.py").write_text(AGENT)
        sent = subprocess.run(
            [sys.executable, str(tmp_path / "agent.py"), collector.url, "4"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert sent.returncode == 0, sent.stderr
        store = collector.store()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and store.counts()["online_results"] < 8:
            time.sleep(0.1)
        scored = latest_scored(store)
        assert len(scored) == 4
        assert all(r["scores"]["trajectory_exact_match"]["score"] == 1.0 for r in scored)
    finally:
        collector.stop(signal.SIGTERM)  # flushes the OTLP exporters
    assert "online: 4 invocation(s) scored" in collector.process.stdout.read()

    events = sink.events()
    assert len(events) == 8 and {e.event_name for e in events} == {"gen_ai.evaluation.result"}
    stored = {(inv.trace_id, inv.span_id) for inv in store.list_invocations()}
    for event in events:
        attributes = {a.key: a.value for a in event.attributes}
        name = attributes["gen_ai.evaluation.name"].string_value
        assert name in ("trajectory_exact_match", "tool_call_count")
        # a count has no pass mark unless online.toml gives one: it is "scored", neither pass nor fail
        assert attributes["gen_ai.evaluation.score.label"].string_value == (
            "pass" if name == "trajectory_exact_match" else "scored"
        )
        assert (event.trace_id.hex(), event.span_id.hex()) in stored  # parented to the evaluated agent span
        # the flat online.toml's one evaluator, and what its results are about
        assert attributes["gen_ai.evaluation.evaluator_name"].string_value == "default"
        assert attributes["gen_ai.evaluation.evaluator_version"].string_value == "1"
        assert attributes["gen_ai.evaluation.target"].string_value == "turn"
    histogram = sink.data_points("gen_ai.evaluation.score")
    counter = sink.data_points("gen_ai.evaluation.results")
    by_metric = {{a.key: a.value.string_value for a in p.attributes}["gen_ai.evaluation.name"]: p for p in histogram}
    assert by_metric["trajectory_exact_match"].count == 4 and by_metric["trajectory_exact_match"].sum == 4.0
    labels = [{a.key: a.value.string_value for a in p.attributes} for p in counter]
    assert all(label["gen_ai.agent.name"] == "remote_bot" for label in labels)
    assert all(label["gen_ai.evaluation.evaluator_name"] == "default" for label in labels)
    assert sum(p.as_int for p in counter) == 8


WORKER = """
import sys, time
from toolpath.store.store import Store
from toolpath.evaluation.online import OnlineEvaluator
import slow_metric  # noqa: F401 - on the path for module:function metrics
evaluator = OnlineEvaluator(Store(sys.argv[1]), {
    "metrics": ["slow_metric:score", "tool_call_count"], "workers": 1, "batch_size": 2,
    "lease_seconds": 2.0, "poll_seconds": 0.05,
}, name=sys.argv[2]).start()
print("ready", flush=True)
while True:
    time.sleep(1)
"""


def test_killing_one_of_two_workers_on_postgresql_scores_everything_once(tmp_path, postgres_url):
    store = Store(postgres_url)
    with store.engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(schema.metadata.tables)}"))  # every table (some refer to others)
    JobQueue(store).attach()
    store.write([invocation(i) for i in range(30)])
    store.on_invocations = None
    (tmp_path / "slow_metric.py").write_text("import time\n\ndef score(row):\n    time.sleep(0.1)\n    return 1.0\n")
    (tmp_path / "worker.py").write_text(WORKER)
    workers = [
        subprocess.Popen(
            [sys.executable, str(tmp_path / "worker.py"), postgres_url, name],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**__import__("os").environ, "PYTHONPATH": f"{tmp_path}:{Path(__file__).resolve().parents[2]}"},
        )
        for name in ("a", "b")
    ]
    try:
        for worker in workers:
            assert worker.stdout.readline().strip() == "ready", worker.stderr.read()
        queue = JobQueue(store)

        def scoring_workers() -> set[str]:
            with store.engine.connect() as conn:
                return {
                    r.worker.split("/")[0] for r in conn.execute(text("SELECT DISTINCT worker FROM online_results"))
                }

        deadline = time.monotonic() + 30
        while scoring_workers() != {"a", "b"} and time.monotonic() < deadline:  # both are working
            time.sleep(0.05)
        workers[0].send_signal(signal.SIGKILL)  # mid-batch: its claimed jobs are left behind
        workers[0].wait(timeout=10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and queue.counts() != {"done": 30}:
            time.sleep(0.1)
        assert queue.counts() == {"done": 30}
    finally:
        for worker in workers:
            worker.kill()
            worker.wait(timeout=10)
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT invocation_id, metric, worker FROM online_results")).all()
    assert len(rows) == 60  # 30 invocations x 2 metrics, each exactly once (the key forbids a second)
    assert {r.invocation_id for r in rows} == {f"{i:016x}" for i in range(30)}
    assert {r.worker.split("/")[0] for r in rows} == {"a", "b"}


def test_listeners_are_told_every_change_once_and_what_came_before(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'l.db'}")
    online = OnlineEvaluator(store, {"metrics": ["tool_call_count"], "poll_seconds": 0.02, "batch_size": 2})
    online.queue.attach()
    store.write([invocation(i) for i in range(3)])  # enqueued before anyone listens
    early: dict[str, int] = {}
    online.add_listener(lambda key, delta: early.__setitem__(key, early.get(key, 0) + delta))
    assert early == {"jobs_queued": 3}
    late: dict[str, int] = {}
    online.start()
    store.write([invocation(i) for i in range(3, 7)])
    assert online.drain(20)
    time.sleep(0.1)  # the workers tell after each batch
    online.add_listener(lambda key, delta: late.__setitem__(key, late.get(key, 0) + delta))
    online.stop()
    store.close()
    totals = {**online.counters(), "workers_alive": 0, "workers": 2}
    told = {key: value for key, value in totals.items() if value}
    assert {k: v for k, v in early.items() if v} == told == {k: v for k, v in late.items() if v}
    assert told["jobs_queued"] == told["jobs_done"] == 7  # summed deltas: never a change told twice


def test_computation_metrics_score_in_the_shared_turns_and_a_judge_does_not_wait_for_them(tmp_path, monkeypatch):
    """A collector shares its ingest turns with its online workers: computation metrics take them (CPU work, in
    turn with ingest); a judge waits on the network and must not hold up ingest, so it calls the model without
    them and takes them only to write."""
    turns = Turns(1)
    turns.acquire()  # an export is being ingested for as long as the test holds it
    store = Store(f"sqlite:///{tmp_path / 't.db'}")
    computed = OnlineEvaluator(store, {"metrics": ["tool_call_count"], "poll_seconds": 0.02})
    computed.turns = turns.yielding
    computed.start()
    try:
        store.write([invocation(i) for i in range(3)])
        assert not computed.drain(1.0)  # waiting its turn
        turns.release()
        assert computed.drain(20)
    finally:
        computed.stop()
    assert computed.queue.counts() == {"done": 3}

    fake = FakeGemini(lambda prompt, seen: Reply(raw="<html><body>502 Bad Gateway</body></html>"))  # any answer
    with fake.running():
        monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        judged_store = Store(f"sqlite:///{tmp_path / 'j.db'}")
        judged = OnlineEvaluator(judged_store, {"metrics": ["fluency"], "poll_seconds": 0.02})
        turns.acquire()
        judged.turns = turns.yielding
        judged.start()
        try:
            judged_store.write([invocation(i) for i in range(2)])
            deadline = time.monotonic() + 20
            while fake.requests < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert fake.requests >= 2  # judged while the turns are held
            assert not judged.drain(0.5)  # its write waits its turn
            turns.release()
            assert judged.drain(20)
        finally:
            judged.stop()
    assert judged.queue.counts() == {"done": 2}


def test_result_labels_are_stored_as_before_and_read_back_by_the_filters_and_series(store):
    """``ResultLabel`` members go to ``online_results.label`` as the same plain text, and the session filter and the
    series of the UI read them back from SQLite and PostgreSQL."""
    online = OnlineEvaluator(store, {"metrics": ["failure", "tool_call_count", "exact_match"], "poll_seconds": 0.01})
    online.start()
    try:
        store.write([invocation(1), invocation(2, failure=1)])
        assert online.drain(20)
    finally:
        online.stop()
    with store.engine.connect() as conn:
        stored = {
            (r[0], r[1]): r[2] for r in conn.exec_driver_sql("SELECT invocation_id, metric, label FROM online_results")
        }
    first, second = invocation(1).invocation_id, invocation(2).invocation_id
    assert stored == {
        (first, "failure"): "pass",
        (second, "failure"): "fail",
        (first, "tool_call_count"): "scored",  # no pass mark
        (second, "tool_call_count"): "scored",
        (first, "exact_match"): "error",  # no reference: no score
        (second, "exact_match"): "error",
    }
    assert all(type(label) is str for label in stored.values())
    by_metric = {r["metric"]: r for r in online_series(store, since_ns=0, bucket_ns=10**18)}
    assert (by_metric["failure"]["passed"], by_metric["failure"]["failed"]) == (1, 1)
    assert by_metric["exact_match"]["errors"] == 2
    for label, sessions in (("fail", ["s-2"]), ("pass", ["s-1"]), ("error", [])):
        where = session_filter({"metric": "failure", "label": label})
        assert where.label is ResultLabel(label)
        assert [row["session_id"] for row in session_page(store, where).rows] == sessions
    with pytest.raises(BadRequest, match=r"^label='scored': expected one of pass, fail, error$"):
        session_filter({"metric": "failure", "label": "scored"})


def test_the_prompt_match_of_online_toml_is_a_member_and_finds_as_it_says(tmp_path):
    """``PromptMatch``: ``match`` read from ``online.toml`` as a member; the golden row found exactly or normalised."""
    (tmp_path / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in GOLDEN))
    for match, found in (("exact", False), ("normalized", True)):
        (tmp_path / "online.toml").write_text(
            f'metrics = ["trajectory_exact_match"]\nreference_dataset = "golden.jsonl"\nmatch = "{match}"\n'
        )
        config = OnlineConfig.load(tmp_path / "online.toml")
        assert config.match is PromptMatch(match)
        golden = References(config.reference_dataset, config.match)
        assert (golden.find("Weather in Paris?") is not None, golden.find("  weather in PARIS ") is not None) == (
            True,
            found,
        )
    with pytest.raises(ConfigError, match=r"^online: match must be 'exact' or 'normalized', got 'fuzzy'$"):
        OnlineConfig(metrics=["trajectory_exact_match"], match="fuzzy")  # type: ignore[arg-type]


def test_each_exported_result_carries_what_the_judge_spent_on_it(tmp_path, monkeypatch):
    """Over OTLP, a judged result carries its judge requests (``toolpath.judge.calls``, the model and
    ``gen_ai.usage.*`` tokens), told apart within a batch of turns; a session's results carry what was spent on that
    session; a computed result carries none. Together they are every request the judge made."""
    from tests.helpers.fake_gemini import json_reply, serving_gemini

    def judge(prompt: str, seen: int) -> Reply:
        if "<conversation_history>" in prompt or "USER TURN" in prompt:
            return json_reply(rubrics=[{"rubric": "helps", "verdict": "yes"}])
        return json_reply(score=4, explanation="Reads well.")

    sink = MetricsLogsSink()
    store = Store(f"sqlite:///{tmp_path / 'o.db'}")
    config = {"poll_seconds": 0.02, "batch_size": 8, "otlp_endpoint": sink.url, "evaluator": [
        {"name": "turns", "metrics": ["fluency", "tool_call_count"]},
        {"name": "conversations", "target": "session", "idle_seconds": 0.3, "metrics": ["multi_turn_task_success_v1"]},
    ]}  # fmt: skip
    with serving_gemini(monkeypatch, judge) as fake:
        online = OnlineEvaluator(store, config).start()
        try:
            turns = [invocation(i).model_copy(update={"response": f"Sunny in city {i}.", "session_id": "s"})
                     for i in range(6)]  # fmt: skip
            store.write(turns)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and store.counts().get("session_results", 0) < 1:
                time.sleep(0.05)
            assert online.drain(30)
        finally:
            online.stop()  # flushes the exporter
        requests = fake.requests
    store.close()
    events = [{a.key: a.value for a in e.attributes} for e in sink.events()]
    by = {}
    for e in events:
        by.setdefault(e["gen_ai.evaluation.name"].string_value, []).append(e)
    assert len(by["fluency"]) == len(by["tool_call_count"]) == 6
    for e in by["fluency"]:  # one request each, though scored six to a batch
        assert e["toolpath.judge.calls"].int_value == 1 and e["gen_ai.usage.input_tokens"].int_value > 0
        assert e["gen_ai.request.model"].string_value == "gemini-2.5-flash"
    assert all("toolpath.judge.calls" not in e for e in by["tool_call_count"])
    (session,) = by["multi_turn_task_success_v1"]
    assert session["gen_ai.evaluation.target"].string_value == "session"
    calls = sum(e["toolpath.judge.calls"].int_value for e in events if "toolpath.judge.calls" in e)
    assert session["toolpath.judge.calls"].int_value >= 1 and calls == requests
