"""Judge metrics through the real google-genai client, pointed by the environment at a fake Gemini server on
127.0.0.1: majority votes, ties, pairwise flips, tolerant parsing, retries, timeouts, caching and budgets."""

from __future__ import annotations

import json

import pytest

from tests.helpers.fake_gemini import FakeGemini, Reply, json_reply
from toolpath.errors import ConfigError
from toolpath.evaluation.runner import evaluate
from toolpath.judges import adk_bridge
from toolpath.judges.adk_criteria import GOOD_LABELS, HALLUCINATION_LABELS, SentenceLabel
from toolpath.judges.client import Judge, JudgeSettings
from toolpath.judges.vertex import PairwiseChoice
from toolpath.store.store import Store
from toolpath.vertex.instance_judges import CHOICES

ROWS = [
    {"prompt": "Set the office to 22 degrees.", "response": "Set the office to 22.0 °C.", "reference": "Done: 22 °C."},
    {"prompt": "Lock the back door.", "response": "The door is locked.", "reference": "The back door is locked."},
]


@pytest.fixture
def gemini(monkeypatch):
    """Start a fake Gemini with ``gemini(script)``; the client finds it through the environment only."""
    started: list = []

    def start(script) -> FakeGemini:
        fake = FakeGemini(script)
        context = fake.running()
        context.__enter__()
        started.append(context)
        monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
        monkeypatch.delenv("GEMINI_API_KEY", raising=False)
        monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        return fake

    yield start
    for context in started:
        context.__exit__(None, None, None)


@pytest.fixture
def toolpath_judge(monkeypatch):
    """ADK's criteria judged by toolpath's own prompts, as without google-adk installed."""
    monkeypatch.setattr(adk_bridge, "adk_installed", lambda: False)


def quick(**overrides) -> JudgeSettings:
    return JudgeSettings(**{"backoff": 0.01, "timeout": 5.0, **overrides})


def test_pointwise_scores_with_explanations_and_the_model_asked(gemini):
    fake = gemini(lambda prompt, seen: json_reply(score=4, explanation="Reads well."))
    result = evaluate(ROWS, ["fluency(num_samples=3, model=gemini-test)"], judge=quick())
    assert [r["fluency/score"] for r in result.metrics_table] == [4.0, 4.0]
    assert result.metrics_table[0]["fluency/explanation"] == "Reads well."
    assert result.metrics_table[0]["fluency/samples"] == [4.0, 4.0, 4.0]
    assert fake.requests == 6 and set(fake.models) == {"gemini-test"}
    assert all("## Rating Rubric" in p for p in fake.prompts)
    assert sum("Set the office to 22.0 °C." in p for p in fake.prompts) == 3  # (rows go out concurrently)
    assert result.judge_usage["requests"] == 6 and result.judge_usage["input_tokens"] > 0


def test_binary_scale_majority_and_tie_fails(gemini):
    # safety is 0/1: two samples 1 then 0 tie, and a tie fails; three samples 1, 0, 1 pass
    gemini(lambda prompt, seen: json_reply(score=1 if seen % 2 == 0 else 0, explanation=f"sample {seen}"))
    two = evaluate(ROWS[:1], ["safety(num_samples=2)"], judge=quick())
    three = evaluate(ROWS[1:], ["safety(num_samples=3)"], judge=quick())
    assert two.metrics_table[0]["safety/score"] == 0.0
    assert three.metrics_table[0]["safety/score"] == 1.0


def test_fenced_and_chatty_replies_parse_and_garbage_is_an_error_not_a_score(gemini):
    replies = {
        "office": Reply('Sure! Here it is:\n```json\n{"score": 5, "explanation": "fine"}\n```\nHope it helps.'),
        "door": Reply("I would rate this a five out of five, it is great."),
    }
    gemini(lambda prompt, seen: replies["office" if "office" in prompt else "door"])
    table = evaluate(ROWS, ["coherence"], judge=quick()).metrics_table
    assert table[0]["coherence/score"] == 5.0
    assert table[1]["coherence/score"] is None
    assert "no JSON object in the reply" in table[1]["coherence/explanation"]
    assert "five out of five" in table[1]["coherence/explanation"]  # the raw reply is kept


def test_out_of_scale_score_is_an_error(gemini):
    gemini(lambda prompt, seen: json_reply(score=7))
    [row] = evaluate(ROWS[:1], ["fluency"], judge=quick()).metrics_table
    assert row["fluency/score"] is None and "not on the scale" in row["fluency/explanation"]


def test_429_and_503_are_retried(gemini):
    fake = gemini(
        lambda prompt, seen: (
            Reply(status=429, retry_after=0.05)
            if seen == 0
            else Reply(status=503)
            if seen == 1
            else json_reply(score=3)
        )
    )
    result = evaluate(ROWS[:1], ["fluency"], judge=quick())
    assert result.metrics_table[0]["fluency/score"] == 3.0
    assert fake.statuses == {429: 1, 503: 1, 200: 1}
    assert result.judge_usage["retries"] == 2


def test_a_judge_that_stays_down_gives_null_with_the_reason(gemini):
    gemini(lambda prompt, seen: Reply(status=500))
    [row] = evaluate(ROWS[:1], ["fluency"], judge=quick(max_attempts=3)).metrics_table
    assert row["fluency/score"] is None
    assert "unavailable after 3 attempt(s)" in row["fluency/explanation"]


def test_slow_replies_time_out_and_are_retried(gemini):
    fake = gemini(lambda prompt, seen: Reply(delay=1.0) if seen == 0 else json_reply(score=2))
    [row] = evaluate(ROWS[:1], ["fluency"], judge=quick(timeout=0.3)).metrics_table
    assert row["fluency/score"] == 2.0 and fake.requests == 2


def test_identical_requests_are_cached_in_the_store(gemini, tmp_path):
    fake = gemini(lambda prompt, seen: json_reply(score=4))
    store = Store(f"sqlite:///{tmp_path / 'cache.db'}")
    first = evaluate(ROWS, ["fluency(num_samples=2)"], store=store, judge=quick())
    assert fake.requests == 4 and first.judge_usage["cached"] == 0
    again = evaluate(ROWS, ["fluency(num_samples=2)"], store=store, judge=quick())
    assert fake.requests == 4  # nothing new was asked
    assert again.judge_usage["cached"] == 4
    assert [r["fluency/score"] for r in again.metrics_table] == [4.0, 4.0]
    more = evaluate(ROWS, ["fluency(num_samples=3)"], store=store, judge=quick())
    assert fake.requests == 6 and more.judge_usage["cached"] == 4  # only the third samples are new


def test_budget_stops_asking_and_says_so(gemini):
    fake = gemini(lambda prompt, seen: json_reply(score=4))
    rows = [{"prompt": f"p{i}", "response": f"r{i}"} for i in range(5)]
    table = evaluate(rows, ["fluency"], judge=Judge(quick(max_requests=2, concurrency=1))).metrics_table
    assert fake.requests == 2
    assert [r["fluency/score"] for r in table].count(4.0) == 2
    exhausted = [r for r in table if r["fluency/score"] is None]
    assert len(exhausted) == 3 and all("budget exhausted" in r["fluency/explanation"] for r in exhausted)


def test_pairwise_flips_positions_and_reports_win_rates(gemini):
    fake = gemini(lambda prompt, seen: json_reply(pairwise_choice="A", explanation="A is better"))
    rows = [{**ROWS[0], "baseline_model_response": "Office set."}]
    always_a = evaluate(rows, ["pairwise_fluency(num_samples=2)"], judge=quick())
    # "A" on both samples means the candidate once and the baseline once: a tie, SAME
    assert always_a.metrics_table[0]["pairwise_fluency/pairwise_choice"] == "SAME"
    assert always_a.metrics_table[0]["pairwise_fluency/score"] == 0.5
    # the two samples went out concurrently, in either order: one shows the candidate first, the other second
    candidate_first = sorted(p.index("Set the office to 22.0 °C.") < p.index("Office set.") for p in fake.prompts)
    assert candidate_first == [False, True]

    def candidate_wins(prompt: str, seen: int) -> Reply:
        candidate_first = prompt.index("Set the office to 22.0 °C.") < prompt.index("Office set.")
        return json_reply(pairwise_choice="A" if candidate_first else "B")

    fake.script = candidate_wins
    result = evaluate(rows, ["pairwise_fluency(num_samples=3)"], judge=quick())
    assert result.metrics_table[0]["pairwise_fluency/pairwise_choice"] == "CANDIDATE"
    assert result.summary_metrics["pairwise_fluency/candidate_model_win_rate"] == 1.0
    assert result.summary_metrics["pairwise_fluency/baseline_model_win_rate"] == 0.0
    # a member, written as its name wherever the table goes (the JSON report, the store)
    assert type(result.metrics_table[0]["pairwise_fluency/pairwise_choice"]) is PairwiseChoice
    assert '"pairwise_fluency/pairwise_choice": "CANDIDATE"' in json.dumps(result.metrics_table[0])


def test_pairwise_choices_are_the_apis_with_a_tie_for_same():
    """``PairwiseChoice``: the candidate and the baseline are the API's ``PairwiseChoice`` names (both versions,
    installed), and a tie is its ``TIE``."""
    for version in ("aiplatform_v1", "aiplatform_v1beta1"):
        api = pytest.importorskip(f"google.cloud.{version}.types.evaluation_service").PairwiseChoice
        assert set(CHOICES) == set(PairwiseChoice)
        assert all(api[name] for name in CHOICES.values())
        assert CHOICES[PairwiseChoice.SAME] == api.TIE.name


def test_missing_column_is_not_evaluated_without_asking(gemini):
    fake = gemini(lambda prompt, seen: json_reply(score=1))
    [row] = evaluate([{"prompt": "p"}], ["groundedness"], judge=quick()).metrics_table
    assert row["groundedness/score"] is None and "row has no" in row["groundedness/explanation"]
    assert fake.requests == 0


def test_final_response_match_v2_majority_of_five(gemini, toolpath_judge):
    gemini(lambda prompt, seen: json_reply(is_the_agent_response_valid="valid" if seen < 3 else "invalid"))
    [row] = evaluate(ROWS[:1], ["final_response_match_v2"], judge=quick()).metrics_table
    assert row["final_response_match_v2/score"] == 1.0
    assert row["final_response_match_v2/explanation"] == "judge: toolpath; 3 of 5 sample(s) valid"
    assert row["final_response_match_v2/judge"] == "toolpath"


def test_final_response_match_v2_tie_is_invalid(gemini, toolpath_judge):
    gemini(lambda prompt, seen: json_reply(is_the_agent_response_valid="valid" if seen % 2 else "invalid"))
    [row] = evaluate(ROWS[:1], ["final_response_match_v2(num_samples=4)"], judge=quick()).metrics_table
    assert row["final_response_match_v2/score"] == 0.0


def test_rubric_based_quality_majority_per_rubric(gemini, toolpath_judge):
    def script(prompt: str, seen: int) -> Reply:
        verdicts = [
            {"id": "concise", "verdict": "yes"},
            {"id": "units", "verdict": "yes" if seen == 0 else "no"},  # yes, no: a tie, so no
        ]
        return json_reply(rubrics=verdicts)

    gemini(script)
    rubrics = [
        {"rubric_id": "concise", "rubric_content": {"text_property": "The answer is one sentence."}},
        {"rubric_id": "units", "rubric_content": {"text_property": "Temperatures carry units."}},
    ]
    metric = f"rubric_based_final_response_quality_v1(num_samples=2, rubrics={json.dumps(rubrics)})"
    [row] = evaluate(ROWS[:1], [metric], judge=quick()).metrics_table
    key = "rubric_based_final_response_quality_v1"
    assert row[f"{key}/score"] == 0.5
    assert row[f"{key}/rubric_verdicts"] == {"concise": True, "units": False}
    assert "not met: units" in row[f"{key}/explanation"]


RUBRICS = [
    {"rubric_id": "concise", "rubric_content": {"text_property": "The answer is one sentence."}},
    {"rubric_id": "units", "rubric_content": {"text_property": "Temperatures carry units."}},
]


@pytest.mark.parametrize(
    "reply",
    [
        {"rubrics": []},
        {"verdicts": [{"id": "concise", "verdict": "yes"}, {"id": "units", "verdict": "yes"}]},
        {"rubrics": [{"id": "concise", "verdict": "yes"}]},  # units: no verdict
        {"rubrics": [{"id": "concise", "verdict": "yes"}, {"id": "units", "verdict": "maybe"}]},
    ],
)
def test_a_reply_missing_a_rubric_verdict_is_an_error_not_a_no(gemini, toolpath_judge, reply):
    gemini(lambda prompt, seen: json_reply(**reply))
    metric = f"rubric_based_final_response_quality_v1(rubrics={json.dumps(RUBRICS)})"
    [row] = evaluate(ROWS[:1], [metric], judge=quick()).metrics_table
    key = "rubric_based_final_response_quality_v1"
    assert row[f"{key}/score"] is None
    assert "sample 1: no yes/no verdict for rubric(s)" in row[f"{key}/explanation"]


def test_rubric_verdicts_keyed_rubric_id_count_and_a_bad_sample_is_left_out(gemini, toolpath_judge):
    def script(prompt: str, seen: int) -> Reply:
        if seen == 0:  # ADK's own key, rubric_id
            return json_reply(
                rubrics=[{"rubric_id": "concise", "verdict": "yes"}, {"rubric_id": "units", "verdict": "no"}]
            )
        return json_reply(rubrics=[{"id": "concise", "verdict": "yes"}])  # units missing: this sample is an error

    gemini(script)
    metric = f"rubric_based_final_response_quality_v1(num_samples=2, rubrics={json.dumps(RUBRICS)})"
    [row] = evaluate(ROWS[:1], [metric], judge=quick()).metrics_table
    key = "rubric_based_final_response_quality_v1"
    assert row[f"{key}/score"] == 0.5  # from the one readable sample: concise yes, units no
    # the two samples are sent at once: which of them the server saw first is not fixed
    assert row[f"{key}/judge_errors"] in (
        ["sample 1: no yes/no verdict for rubric(s) units"],
        ["sample 2: no yes/no verdict for rubric(s) units"],
    )


def test_an_unreadable_reply_fails_that_judge_result_only(gemini):
    # a proxy answers with an HTML page: the SDK cannot decode it; the judge metric says so, the rest scores
    gemini(lambda prompt, seen: Reply(raw="<html><body>502 Bad Gateway</body></html>"))
    result = evaluate(ROWS, ["exact_match", "fluency"], judge=quick())
    assert [row["exact_match/score"] for row in result.metrics_table] == [0.0, 0.0]
    assert [row["fluency/score"] for row in result.metrics_table] == [None, None]
    assert "judge request failed: JSONDecodeError" in result.metrics_table[0]["fluency/explanation"]
    assert result.judge_usage["errors"] == 2


def test_hallucinations_segments_then_validates(gemini, toolpath_judge):
    def script(prompt: str, seen: int) -> Reply:
        if prompt.startswith("Split the following text"):
            return json_reply(sentences=["The office is at 22 °C.", "Paris is the capital of Italy.", "Anything else?"])
        return json_reply(
            sentences=[
                {"sentence": "The office is at 22 °C.", "label": "supported"},
                {"sentence": "Paris is the capital of Italy.", "label": "contradictory"},
                {"sentence": "Anything else?", "label": "not_applicable"},
            ]
        )

    fake = gemini(script)
    row = {**ROWS[0], "predicted_trajectory": [{"tool_name": "set_temperature", "tool_input": {"temperature": 22}}]}
    [out] = evaluate([row], ["hallucinations_v1"], judge=quick()).metrics_table
    assert out["hallucinations_v1/score"] == pytest.approx(2 / 3)
    assert out["hallucinations_v1/explanation"] == "judge: toolpath; 1 contradictory, 1 not_applicable, 1 supported"
    assert fake.requests == 2 and "set_temperature" in fake.prompts[1]


def test_hallucination_labels_are_adks():
    """``SentenceLabel``: the labels ADK's hallucinations_v1 reads, those that count for a sentence the same."""
    adk = pytest.importorskip("google.adk.evaluation.hallucinations_v1")
    assert set(HALLUCINATION_LABELS) == adk._POSITIVE_LABELS | adk._NEGATIVE_LABELS
    assert set(GOOD_LABELS) == adk._POSITIVE_LABELS
    assert all(type(label) is SentenceLabel for label in HALLUCINATION_LABELS)


def test_no_credentials_is_a_clear_error(monkeypatch):
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="GOOGLE_API_KEY"):
        evaluate(ROWS[:1], ["fluency"])


def test_hallucinations_can_check_intermediate_responses(gemini, toolpath_judge):
    def script(prompt: str, seen: int) -> Reply:
        if prompt.startswith("Split the following text"):
            return json_reply(sentences=["Checking the thermostat first.", "Set the office to 22.0 °C."])
        return json_reply(sentences=[{"label": "supported"}, {"label": "unsupported"}])

    fake = gemini(script)
    row = {**ROWS[0], "predicted_trajectory": [], "intermediate_responses": ["Checking the thermostat first."]}
    metric = "hallucinations_v1(evaluate_intermediate_nl_responses=true)"
    [out] = evaluate([row], [metric], judge=quick()).metrics_table
    assert "Checking the thermostat first." in fake.prompts[0]
    assert out["hallucinations_v1/score"] == 0.5
    [plain] = evaluate([row], ["hallucinations_v1"], judge=quick()).metrics_table
    assert "Checking the thermostat first." not in fake.prompts[2]
    assert plain["hallucinations_v1/score"] == 0.5


def test_budget_holds_with_many_requests_in_flight(gemini):
    fake = gemini(lambda prompt, seen: Reply(json.dumps({"score": 4}), delay=0.05))
    rows = [{"prompt": f"p{i}", "response": f"r{i}"} for i in range(20)]
    table = evaluate(rows, ["fluency"], judge=Judge(quick(max_requests=5))).metrics_table  # 32 at a time
    assert fake.requests == 5
    assert sum(r["fluency/score"] is not None for r in table) == 5


def test_one_judge_runs_again_on_new_event_loops_and_on_several_at_once(gemini):
    """Online workers call ``Judge.run`` once per batch, each on a fresh event loop, several threads at a time: the
    SDK's async client of one loop is never used on another (that fails with "Event loop is closed")."""
    import threading

    fake = gemini(lambda prompt, seen: json_reply(score=4, explanation="Reads well."))
    judge = Judge(quick())
    scored: list = []

    def batch() -> None:
        for _ in range(2):
            result = evaluate(ROWS, ["fluency"], judge=judge)
            scored.extend(r["fluency/score"] for r in result.metrics_table)

    threads = [threading.Thread(target=batch) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert scored == [4.0] * 8 and judge.usage.errors == 0 and fake.requests == 8


def test_a_bad_judge_setting_names_where_it_came_from(monkeypatch):
    """A setting that is not a number names the variable it came from, or the option, in plain words."""
    from toolpath.errors import ConfigError
    from toolpath.judges.client import settings_from

    monkeypatch.setenv("TOOLPATH_JUDGE_CONCURRENCY", "many")
    with pytest.raises(ConfigError, match=r"^\$TOOLPATH_JUDGE_CONCURRENCY: 'many' is not a whole number$"):
        settings_from(None)
    monkeypatch.delenv("TOOLPATH_JUDGE_CONCURRENCY")
    with pytest.raises(ConfigError, match=r"^judge setting max_requests: 'lots' is not a whole number$"):
        settings_from({"max_requests": "lots"})
