"""The ``evaluateInstances`` API reference (``seeds/`` beside the checkout, the page with the endpoint, every input
and result, and examples) replayed against a running ``toolpath collect`` that has no NLTK data and no network
beyond loopback (its judge is the fake Gemini server):

- every example request, as its ``curl -d`` body (trailing commas, ``instances`` given once per instance) and as its
  Python ``data``, answers 200 with the result the page shows, the ROUGE example (``rougeLsum``, ``use_stemmer``,
  ``split_summaries``) with rouge-score's numbers;
- every input's syntax block, its placeholders filled in, answers 200 with the fields of the result block the page
  gives it (or 501 for an input toolpath documents as not served); a block that contradicts the API's own message
  types (:data:`ERRATA`) is answered as the API answers it, and answers 200 once sent as meant.

The page is read, not copied: without it beside the checkout (a copy of the repository on its own), the tests are
skipped."""

from __future__ import annotations

import ast
import itertools
import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.collector import TOKEN, Collector
from tests.helpers.fake_gemini import FakeGemini, Reply, json_reply

PATH = "/v1beta1/projects/my-project/locations/us-central1:evaluateInstances"
SEEDS = Path(__file__).resolve().parents[2].parent / "shared" / "seeds"
NOT_SERVED = {"comet_input", "metricx_input", "rubric_based_instruction_following_input", "rubric_based_metric_input"}
"""Inputs docs/vertex.md says toolpath answers 501 (Google's hosted models, rubric-based metrics)."""
ERRATA: dict[str, tuple[str, str | None, str, str]] = {
    # result block: (the input the block names, what the API's message refuses in it or None, the input meant,
    # the result that input has)
    "pairwise_question_answering_quality_result": (
        "question_answering_quality_input", "baseline_prediction",
        "pairwise_question_answering_quality_input", "pairwise_question_answering_quality_result",
    ),
    "question_answering_relevancy_result": (
        "question_answering_quality_input", None,
        "question_answering_relevance_input", "question_answering_relevance_result",
    ),
    **{
        f"{tool}_results": (f"{tool}_input", "instance", f"{tool}_input", f"{tool}_results")
        for tool in ("tool_call_valid", "tool_name_match", "tool_parameter_key_match", "tool_parameter_kv_match")
    },
}  # fmt: skip
"""The page's syntax blocks that contradict the API's own message types: the PairwiseQuestionAnsweringQuality and
QuestionAnsweringRelevance sections repeat ``question_answering_quality_input``, and the tool inputs' blocks give one
``instance`` where the message has the list ``instances``. Sent as written, each is answered as the API answers it
(a 400 naming the field its message lacks, or the result of the input it names); sent as meant, with the
documented result's fields."""


def reference_page() -> str:
    pages = [p for p in sorted(SEEDS.glob("*.txt")) if ":evaluateInstances" in p.read_text(encoding="utf-8")]
    if not pages:
        pytest.skip(f"the evaluateInstances reference is not beside the checkout ({SEEDS})")
    assert len(pages) == 1, pages
    return pages[0].read_text(encoding="utf-8")


def example_bodies(page: str) -> list[tuple[str, str]]:
    """``(form, body text)`` of each example request: the ``curl -d '…'`` bodies (shell quoting undone) and the
    Python ``data = {…}`` literals as JSON (the syntax section's ``data = {…}`` placeholder is not a request)."""
    bodies = [("curl", m.group(1).replace("'\\''", "'")) for m in re.finditer(r"-d '(.*?)'\n", page, re.S)]
    for match in re.finditer(r"^data = (\{.*?^\})$", page, re.S | re.M):
        if match.group(1).replace(" ", "").replace("\n", "") == "{...}":
            continue
        bodies.append(("python", json.dumps(ast.literal_eval(match.group(1)))))
    return bodies


def blocks(page: str) -> list[str]:
    """The page's syntax blocks: from a line ``{`` to the next line ``}``."""
    return re.findall(r"^\{\n(?:.*\n)*?^\}$", page, re.M)


def syntax_pairs(page: str) -> list[tuple[str, str, str]]:
    """``(input name, its block, the result block after it)`` for each input the page describes."""
    named = []
    for block in blocks(page):
        first = re.match(r'\{\n\s*"(\w+)', block)
        if first and (first.group(1).endswith("_input") or re.search(r"_results?$", first.group(1))):
            named.append((first.group(1), block))
    pairs = []
    for (name, block), (result, result_block) in itertools.pairwise(named):
        if name.endswith("_input") and not result.endswith("_input"):
            pairs.append((name, block, result_block))
    return pairs


def tool_message(page: str) -> str:
    """The page's example of a tool-calling prediction (``{"content", "tool_calls"}``), as JSON text."""
    [block] = [b for b in blocks(page) if b.startswith('{\n  "content"')]
    return json.dumps(json.loads(block))


def filled(name: str, block: str, page: str) -> str:
    """The syntax block as a request: the missing quote after the input's name added, ``string`` and ``bool``
    placeholders given values (a tool-calling message for the tool inputs, the same text as prediction and
    reference elsewhere, so each computed score is 1)."""
    body = block.replace(f'"{name}: {{', f'"{name}": {{', 1)
    tool = name.startswith("tool_")

    def value(match: re.Match[str]) -> str:
        field = match.group(1)
        if tool and field in ("prediction", "reference"):
            return f'"{field}": {json.dumps(tool_message(page))}'
        if field == "rouge_type":  # one of the values the page lists, the one that splits sentences
            return '"rouge_type": "rougeLsum"'
        text = "The hall light is off." if field in ("prediction", "reference") else f"The {field} of the test."
        return f'"{field}": {json.dumps(text)}'

    body = re.sub(r'"(\w+)": string', value, body)
    return re.sub(r'"(\w+)": bool', r'"\1": true', body)


def result_fields(block: str) -> tuple[str, set[str], str | None]:
    """``(result name, its fields, the values list's name or None)`` of a result block."""
    name = re.match(r'\{\n\s*"(\w+)', block).group(1)  # type: ignore[union-attr]
    values = re.search(r'"(\w+_(?:metric_)?values)"', block)
    fields = set(re.findall(r'"(\w+)": (?:float|string|PairwiseChoice)', block))
    return name, fields, values.group(1) if values else None


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def script(prompt: str, seen: int) -> Reply:
    if '"pairwise_choice"' in prompt:
        return json_reply(pairwise_choice="A", explanation="A covers more of the context")
    return json_reply(score=1, explanation="rated by the fake judge")


@pytest.fixture(scope="module")
def collector(tmp_path_factory) -> Any:
    """A collector as on a fresh machine: no NLTK data (an empty home, no ``$NLTK_DATA``), the judge on loopback."""
    home = tmp_path_factory.mktemp("home")
    fake = FakeGemini(script)
    with fake.running(), pytest.MonkeyPatch.context() as env:
        env.setenv("HOME", str(home))
        env.delenv("NLTK_DATA", raising=False)
        env.setenv("GOOGLE_API_KEY", "test-key")
        env.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        for var in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
            env.delenv(var, raising=False)
        served = Collector(tmp_path_factory.mktemp("reference")).start()
        try:
            yield served
        finally:
            served.stop()
    assert not (home / "nltk_data").exists()  # nothing downloaded


def post(url: str, body: str) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url + PATH, data=body.encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {TOKEN}")
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_every_example_request_answers_as_the_page_shows(collector):
    from rouge_score import rouge_scorer

    from toolpath.metrics.sentence_model import ensure_english

    page = reference_page()
    bodies = example_bodies(page)
    assert [form for form, _ in bodies] == ["curl", "curl", "python", "python"]
    replies: dict[str, list[dict[str, Any]]] = {}
    for form, body in bodies:
        status, reply = post(collector.url, body)
        assert status == 200, (form, body[:80], reply)
        replies.setdefault(next(iter(reply)), []).append(reply)
    assert sorted(replies) == ["pairwiseSummarizationQualityResult", "rougeResults"]
    for same in replies.values():  # the curl form and the Python form are one request
        assert same[0] == same[1]
    assert replies["pairwiseSummarizationQualityResult"][0] == {
        "pairwiseSummarizationQualityResult": {
            "pairwiseChoice": "CANDIDATE", "explanation": "A covers more of the context", "confidence": 1.0,
        }
    }  # fmt: skip
    [rouge_body] = [json.loads(b) for form, b in bodies if form == "python" and "rouge_input" in b]
    spec = rouge_body["rouge_input"]["metric_spec"]
    assert spec == {"rouge_type": "rougeLsum", "use_stemmer": True, "split_summaries": True}
    ensure_english()  # rouge-score itself, in this process, with NLTK's model
    scorer = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True, split_summaries=True)
    expected = [
        scorer.score(i["reference"], i["prediction"])["rougeLsum"].fmeasure
        for i in rouge_body["rouge_input"]["instances"]
    ]
    got = [v["score"] for v in replies["rougeResults"][0]["rougeResults"]["rougeMetricValues"]]
    assert len(got) == 3
    assert got == pytest.approx(expected, abs=1e-7)  # the reply's score is a 32-bit float
    assert len(set(got)) == 3 and all(0 < s < 1 for s in got)


def test_every_input_of_the_page_answers_with_its_documented_result(collector):
    page = reference_page()
    pairs = syntax_pairs(page)
    assert len(pairs) == 21  # the page's list of parameters: 21 inputs, each with its result
    for name, block, result_block in pairs:
        body = filled(name, block, page)
        result, fields, values = result_fields(result_block)
        if result in ERRATA:
            named, refused, meant, result = ERRATA[result]
            assert name == named
            status, reply = post(collector.url, body)
            if refused is None:
                assert (status, list(reply)) == (200, [camel(name.removesuffix("_input") + "_result")]), name
            else:
                assert (status, reply["error"]["status"]) == (400, "INVALID_ARGUMENT"), name
                assert f'no field named "{refused}"' in reply["error"]["message"], name
            body = body.replace(f'"{name}"', f'"{meant}"', 1)
            body = re.sub(r'"instance": (\{.*?\n    \})', r'"instances": [\1]', body, flags=re.S) if values else body
            name = meant
        sent = json.loads(re.sub(r",(\s*[}\]])", r"\1", body))
        assert list(sent) == [name]
        status, reply = post(collector.url, body)
        if name in NOT_SERVED:
            assert (status, reply["error"]["status"]) == (501, "UNIMPLEMENTED"), name
            continue
        assert status == 200, (name, reply)
        assert list(reply) == [camel(result)], name
        answer = reply[camel(result)]
        if values is not None:  # computed: one value per instance, each the score of equal texts
            assert list(answer) == [camel(values)], name
            assert answer[camel(values)] == [{"score": 1.0}] * len(sent[name]["instances"]), name
        else:  # judged: the documented fields, no other
            assert set(answer) == {camel(f) for f in fields}, name
            assert answer["confidence"] == 1.0, name
