"""What content leaves the process: redacted keys at any depth, capture off, long values cut with a marker."""

from __future__ import annotations

import json

import toolpath
from tests.helpers.builders import spans_by_name
from toolpath.tracer import content
from toolpath.tracer import semconv as sc


@toolpath.tool
def get_weather(city: str, unit: str = "C") -> dict:
    """Current weather for a city.

    Longer text that is not part of the description."""
    return {"city": city, "unit": unit, "temp": 21}


class TestContentPolicy:
    def test_redact_keys_at_any_depth(self, store_url, app_spans):
        toolpath.init(store=store_url, redact_keys=["password", "API_KEY"])

        @toolpath.tool
        def login(user: str, password: str, config: dict) -> dict:
            return {"ok": True, "api_key": "sk-live-123"}

        login("ada", "hunter2", {"nested": {"api_key": "sk-abc", "region": "eu"}})
        attrs = spans_by_name(app_spans)["execute_tool login"].attributes
        args = json.loads(attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS])
        assert args == {
            "user": "ada",
            "password": "[REDACTED]",
            "config": {"nested": {"api_key": "[REDACTED]", "region": "eu"}},
        }
        assert "sk-live-123" not in attrs[sc.GEN_AI_TOOL_CALL_RESULT]

    def test_capture_off_records_no_content(self, store_url, app_spans):
        toolpath.init(store=store_url, capture_content=False)
        get_weather("Paris")
        attrs = spans_by_name(app_spans)["execute_tool get_weather"].attributes
        assert sc.GEN_AI_TOOL_CALL_ARGUMENTS not in attrs
        assert sc.GEN_AI_TOOL_CALL_RESULT not in attrs
        assert attrs[sc.GEN_AI_TOOL_NAME] == "get_weather"

    def test_long_values_truncated_with_marker(self, store_url, app_spans):
        toolpath.init(store=store_url, max_value_length=100)

        @toolpath.tool
        def echo(text: str) -> str:
            return text

        echo("x" * 500)
        attrs = spans_by_name(app_spans)["execute_tool echo"].attributes
        assert attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS].endswith("…[truncated 411 chars]")
        assert set(attrs[sc.TOOLPATH_TRUNCATED]) == {sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.GEN_AI_TOOL_CALL_RESULT}


def test_a_prompt_given_as_a_dict_and_a_result_as_a_list_are_redacted_by_key(store_url, app_spans):
    """Neither is ``str()``-ed before redaction: a repr would hide the ``password`` and ``Authorization`` keys."""
    toolpath.init(store=store_url)

    @toolpath.agent(name="structured")
    def structured(request: dict) -> list:
        return [{"status": "ok", "Authorization": "Basic dXNlcjpwYXNz"}]

    structured({"question": "reset my login", "password": "hunter2-secret"})
    toolpath.flush()
    attrs = spans_by_name(app_spans)["invoke_agent structured"].attributes
    exported = json.dumps(dict(attrs))
    assert "hunter2-secret" not in exported and "dXNlcjpwYXNz" not in exported
    prompt = json.loads(json.loads(attrs[sc.GEN_AI_INPUT_MESSAGES])[0]["parts"][0]["content"])
    assert prompt == {"question": "reset my login", "password": "[REDACTED]"}


def test_the_agent_threads_cost_does_not_grow_with_the_value_past_the_limit(store_url, app_spans):
    """A 10 MB tool result costs the agent about what a 1 MB one does: the value is cut before it is redacted
    and serialised (relative timing, best of three, so a busy machine does not decide)."""
    toolpath.init(store=store_url, max_value_length=64 * 1024)

    @toolpath.tool
    def fetch(size: int) -> dict:
        return {"rows": [{"id": i, "text": "lorem ipsum dolor " * 4} for i in range(size)], "blob": "x" * size * 80}

    def cost(size: int) -> float:
        return min(_timed(lambda: fetch(size)) for _ in range(5))

    small, large = cost(12_000), cost(120_000)  # ~1 MB and ~10 MB of result
    attrs = [s.attributes for s in app_spans.get_finished_spans() if s.name == "execute_tool fetch"][-1]
    assert len(attrs[sc.GEN_AI_TOOL_CALL_RESULT]) < 64 * 1024 + 64
    assert sc.GEN_AI_TOOL_CALL_RESULT in attrs[sc.TOOLPATH_TRUNCATED]
    # building the value itself is the tool's cost and grows 10x; what toolpath adds must not
    build_small = min(_timed(lambda: fetch.__wrapped__(12_000)) for _ in range(5))
    build_large = min(_timed(lambda: fetch.__wrapped__(120_000)) for _ in range(5))
    added_small, added_large = max(small - build_small, 1e-4), max(large - build_large, 1e-4)
    # linear in the value would be ~10x here (it was, before values were cut first); bounded stays near 1x
    assert added_large / added_small < 6, (added_small, added_large)


def _timed(fn) -> float:
    import time

    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def test_encoded_values_read_as_the_standard_encoder_writes_them():
    """The per-call encoder (the C encoder made once) writes what ``json.dumps`` does, and what it cannot write
    (a tuple key) still becomes text, never an error on the agent's thread."""
    values = [
        {"room": "living", "unit": "C", "temperature": 20.5, "ok": True, "none": None},
        ["é", 1, 2.5, float("nan"), {"nested": [1, {"x": "y"}]}],
        "plain text",
        12,
        {1: "int key", 2.5: "float key"},
    ]
    for value in values:
        assert content.encode(value) == (json.dumps(value, ensure_ascii=False, separators=(",", ":")), False)
    text, cut = content.encode({("a", "b"): 1})
    assert not cut and "('a', 'b')" in json.loads(text)


def test_the_short_paths_write_what_the_full_walk_writes(monkeypatch):
    """A dict of a few plain fields skips the bounded copy, and a prompt or answer is quoted at once: both must
    write exactly what the full walk (bounded copy, redaction walk, encoder) writes, under every policy — a
    redact key naming a message's own key (``content``), no redaction, a limit the value crosses."""
    flat = [
        {"room": "living", "unit": "C", "temperature": 20.5, "ok": True, "none": None, "n": 4111111111111111},
        {"password": "hunter2", "note": "mail bob@example.com", "session_id": "chat-bob@example.com"},
        {"q": "key sk-proj-abcdefghijklmnopqrstuvwxyz123456 and Bearer abcdefghijklmnop", "é": 'ü "q" \n'},
        {"big": "x" * 70, "other": "y" * 20},
        {},
    ]
    texts = ["go", "", 'ü "quoted" \\ \n\t\x01', "mail bob@example.com", '{"password": "hunter2"}', "z" * 90]
    policies = [
        content.ContentPolicy(),
        content.ContentPolicy.build(True, ["content", "room"], 64 * 1024),
        content.ContentPolicy.build(True, [], 64 * 1024, redact=False),
        content.ContentPolicy.build(True, [], 100),
    ]

    def full_walk(value):
        with monkeypatch.context() as m:
            m.setattr(content, "_FLAT_FIELDS", -1)  # no dict counts as flat: every value takes the full walk
            return content.encode(value)

    previous = content.policy()
    try:
        for policy in policies:
            content.set_policy(policy)
            for value in flat:
                assert content.encode(value) == full_walk(value), (policy, value)
            for text in texts:
                for role, finish in (("user", None), ("assistant", "stop")):
                    message = {"role": role, "parts": [{"type": "text", "content": text}]}
                    if finish:
                        message["finish_reason"] = finish
                    assert content.encode_message(role, text, finish) == full_walk([message]), (policy, text)
        content.set_policy(policies[1])
        assert json.loads(content.encode_message("user", "my secret")[0])[0]["parts"][0]["content"] == "[REDACTED]"
        content.set_policy(policies[0])
        assert "hunter2" not in content.encode(flat[1])[0] and "bob@example.com" not in content.encode(flat[1])[0]
    finally:
        content.set_policy(previous)


def test_a_value_that_contains_itself_is_recorded_and_the_call_traced(store_url, app_spans):
    """A tool argument holding itself (directly, twice over, or in a list) is recorded down to a depth with a
    marker, and the tool's span exists: the walk that bounds values ends on its own budget and depth."""
    toolpath.init(store=store_url)
    looped: dict = {"name": "node"}
    looped["self"] = looped
    wide: dict = {}
    wide["a"] = wide
    wide["b"] = wide
    nested: list = []
    nested.append(nested)

    @toolpath.tool
    def inspect_graph(node: object) -> str:
        return "seen"

    @toolpath.agent(name="grapher")
    def grapher(prompt: str) -> str:
        return " ".join(inspect_graph(value) for value in (looped, wide, nested))

    assert grapher("walk it") == "seen seen seen"
    assert toolpath.flush()
    tools = [s for s in app_spans.get_finished_spans() if s.name == "execute_tool inspect_graph"]
    assert len(tools) == 3
    first = tools[0].attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]
    assert '"name":"node"' in first and content.TOO_DEEP in first
    assert all(sc.GEN_AI_TOOL_CALL_ARGUMENTS in s.attributes[sc.TOOLPATH_TRUNCATED] for s in tools)


def test_a_call_the_tracer_failed_on_runs_and_flush_says_the_record_is_incomplete(store_url, monkeypatch):
    """A failure inside tracing never stops the tool; it is counted, and flush() is no longer all-delivered."""
    from toolpath.tracer import spans

    toolpath.init(store=store_url)

    @toolpath.tool
    def lookup(city: str) -> str:
        return city.upper()

    assert toolpath.flush()
    before = toolpath.stats()["calls_untraced"]

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("tracer bug")

    monkeypatch.setattr(spans, "start_tool_span", broken)
    assert lookup("paris") == "PARIS"  # the tool ran
    assert toolpath.stats()["calls_untraced"] == before + 1
    assert toolpath.flush() is False
    assert toolpath.flush() is True  # told once, as other losses are
