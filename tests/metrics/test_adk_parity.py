"""toolpath's ADK metrics against ADK's own classes, on generated inputs: the tokenizer and
``response_match_score`` against ``_UnicodeAwareTokenizer`` and ``RougeEvaluator``, the trajectory matches
against ``TrajectoryEvaluator`` (docs/spec.md §4, §6)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("google.adk.evaluation.final_response_match_v1")

from google.adk.evaluation.final_response_match_v1 import _UnicodeAwareTokenizer

from tests.helpers.adk_eval import (
    adk_invocation,
    evaluate,
    rouge_evaluator,
    toolpath_calls,
    trajectory_evaluator,
)
from toolpath.metrics import text, trajectory_match
from toolpath.metrics.adk_args_rule import as_adk_reads, client_call_names, none_args_equal_empty
from toolpath.metrics.tokenize import adk_tokenize

PARITY = settings(max_examples=250, deadline=None)

# --- text: every script ADK's tokenizer treats differently, and the characters at its edges ----------------

LATIN = "abcxyzABCXYZ"
ACCENTED = "éèêëàâäçñöüßÉÀÇÑÖÜİıœæøåł"
COMBINING = "\u0301\u0308\u0323"  # acute, diaeresis, dot below
DIGITS = "0123456789"
FULL_WIDTH = "０１２９ＡＺａｚ"
CHINESE = "天气很好今北京上海中国人"
JAPANESE = "ひらがなカタカナ・ー東京ｶﾀｶﾅ･"  # with the katakana middle dot, the long vowel mark, half-width forms
KOREAN = "한국어날씨좋아요"
JAMO = "ㄱㄴㅏㅓᄀ낙"  # compatibility jamo (NFKC folds them to jamo) and conjoining jamo
THAI = "สวัสดีครับอากาศดี๑๒๓"  # consonants, vowel and tone marks, Thai digits
PUNCTUATION = " _-.,!?;:'\"()[]、。！？\n\t\u00a0\u3000"
ALPHABET = LATIN + ACCENTED + COMBINING + DIGITS + FULL_WIDTH + CHINESE + JAPANESE + KOREAN + JAMO + THAI + PUNCTUATION
WORDS = ["running", "runs", "weather", "sunny", "rained", "doors", "Paris", "café", "naïve", "Zürich_2024", "20°C"]

texts = st.lists(
    st.one_of(
        st.text(alphabet=ALPHABET, max_size=12),
        st.sampled_from(WORDS),
        st.characters(exclude_categories=["Cs"]),  # now and then any character at all
    ),
    max_size=10,
).map(" ".join)


@PARITY
@given(texts, st.booleans())
def test_tokens_equal_adk_tokenizer(sample, use_stemmer):
    assert adk_tokenize(sample, use_stemmer) == _UnicodeAwareTokenizer(use_stemmer=use_stemmer).tokenize(sample)


@PARITY
@given(texts, texts)
def test_response_match_score_equals_rouge_evaluator(response, reference):
    expected = evaluate(rouge_evaluator(), [adk_invocation("q", response)], [adk_invocation("q", reference)])
    ours = text.response_match_score([response], [reference])
    assert ours.score == expected.overall_score
    assert ours.details["per_invocation_scores"] == [r.score for r in expected.per_invocation_results]


@pytest.mark.parametrize(
    ("sample", "tokens"),
    [
        ("東京・大阪", ["東", "京", "・", "大", "阪"]),  # the middle dot is a token
        ("ｶﾀｶﾅ･ﾃｽﾄ", ["カ", "タ", "カ", "ナ", "・", "テ", "ス", "ト"]),  # half-width forms fold first
        ("ㄱㄴ 한국", ["ᄀᄂ", "한", "국"]),  # NFKC-normalised jamo stay one word
        ("ราคา150บาท", ["ร", "า", "ค", "า150", "บ", "า", "ท"]),  # digits stay glued to a Thai character
        ("Café_OLÉ naïve_runs", ["café", "olé", "naïve", "run"]),  # _ splits; only ASCII words are stemmed
        ("２０２４年", ["2024", "年"]),
    ],
)
def test_adk_quirks(sample, tokens):
    assert adk_tokenize(sample) == tokens == _UnicodeAwareTokenizer(use_stemmer=True).tokenize(sample)


def test_missing_reference_is_the_empty_string():
    expected = evaluate(rouge_evaluator(), [adk_invocation("q", "hello")], [adk_invocation("q", None)])
    assert expected.overall_score == 0.0
    assert text.response_match_score(["hello"], [""]).score == 0.0


# --- trajectories: bool / int / float mixes, nesting, absent / null / empty args, every match type ---------

NAMES = ["get_weather", "set_light", "now", "adk_request_confirmation"]  # the last one ADK sends its client
KEYS = ["on", "city", "level", "opts"]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, 2, -1]),
    st.sampled_from([0.0, 1.0, 2.0, 0.5, -0.0]),
    st.sampled_from(["Paris", "1", "true", ""]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    max_leaves=6,
)
arguments = st.one_of(st.none(), st.just({}), st.dictionaries(st.sampled_from(KEYS), values, max_size=3))
calls = st.tuples(st.sampled_from(NAMES), arguments)


def retyped(value):
    """The same value as Python sees it with its numbers and booleans spelled another way (1 / 1.0 / True)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return float(value) if value not in (0, 1) else bool(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: retyped(v) for k, v in reversed(value.items())}
    if isinstance(value, list):
        return [retyped(v) for v in value]
    return value


@st.composite
def related(draw, reference):
    """An actual trajectory drawn near ``reference``: calls kept, retyped, emptied, changed, dropped,
    duplicated, reordered or added to."""
    actual = []
    for name, args in reference:
        edit = draw(st.sampled_from(["keep", "keep", "retype", "empty", "change", "drop", "twice"]))
        if edit == "keep":
            actual.append((name, args))
        elif edit == "retype":
            actual.append((name, retyped(args)))
        elif edit == "empty":
            actual.append((name, {} if args is None else None))
        elif edit == "change":
            actual.append(draw(calls))
        elif edit == "twice":
            actual += [(name, args), (name, args)]
    if draw(st.booleans()):
        actual = draw(st.permutations(actual))
    if draw(st.booleans()):
        actual.insert(draw(st.integers(0, len(actual))), draw(calls))
    return actual


@st.composite
def cases(draw):
    """A case of 1-3 invocations: (actual, expected) trajectories per invocation."""
    expected = draw(st.lists(st.lists(calls, max_size=4), min_size=1, max_size=3))
    return [draw(related(reference)) for reference in expected], expected


VERTEX = {
    "EXACT": trajectory_match.exact_match,
    "IN_ORDER": trajectory_match.in_order_match,
    "ANY_ORDER": trajectory_match.any_order_match,
}


@settings(max_examples=200, deadline=None)
@given(cases(), st.sampled_from(list(VERTEX)), st.booleans())
def test_trajectory_scores_equal_trajectory_evaluator(case, match_type, ignore_args):
    """``tool_trajectory_avg_score`` and, call for call, the ``trajectory_*`` matches (whose null-args wildcard
    is an option, off here) give the numbers of ADK's evaluator."""
    actual, expected = case
    adk = evaluate(
        trajectory_evaluator(match_type, ignore_args),
        [adk_invocation("q", None, a) for a in actual],
        [adk_invocation("q", None, e) for e in expected],
    )
    ours = trajectory_match.tool_trajectory_avg_score(
        [toolpath_calls(a) for a in actual],
        [toolpath_calls(e) for e in expected],
        match_type=match_type,
        ignore_args=ignore_args,
    )
    assert ours.score == adk.overall_score
    assert ours.details["per_invocation_scores"] == [r.score for r in adk.per_invocation_results]

    # Vertex's matches hold a call without arguments unequal to {} and keep every call; ADK 2.15 and later hold
    # them equal and leave out the calls ADK sends its client
    def same_calls(trajectories):
        return as_adk_reads(trajectories, none_as_empty=none_args_equal_empty(), left_out=client_call_names())

    for a, e, one in zip(
        same_calls([toolpath_calls(a) for a in actual]),
        same_calls([toolpath_calls(e) for e in expected]),
        adk.per_invocation_results,
        strict=True,
    ):
        vertex = VERTEX[match_type](a, e, ignore_args=ignore_args, null_args_wildcard=False)
        assert vertex.score == one.score


@pytest.mark.parametrize(
    ("actual", "expected", "score"),
    [
        ([("set_light", {"on": 0})], [("set_light", {"on": False})], 1.0),  # 0 == False
        ([("set_light", {"level": [1, {"x": True}]})], [("set_light", {"level": [1.0, {"x": 1}]})], 1.0),
        # a call without args against {}: unequal before google-adk 2.15, equal since (asked of the installed ADK)
        ([("now", {})], [("now", None)], None),
        ([("now", None)], [("now", {})], None),
        ([("now", None)], [("now", None)], 1.0),
        ([("set_light", {"on": 2})], [("set_light", {"on": True})], 0.0),
    ],
)
def test_call_equality_examples(actual, expected, score):
    adk = evaluate(trajectory_evaluator(), [adk_invocation("q", None, actual)], [adk_invocation("q", None, expected)])
    if score is None:
        score = 1.0 if none_args_equal_empty() else 0.0
    assert adk.overall_score == score
    ours = trajectory_match.tool_trajectory_avg_score([toolpath_calls(actual)], [toolpath_calls(expected)])
    assert ours.score == score


@pytest.mark.parametrize("equal", [True, False])
def test_none_args_rule_can_be_set_either_way(equal):
    """The rule the installed ADK answers is the default; either one can be asked for."""
    ours = trajectory_match.tool_trajectory_avg_score(
        [toolpath_calls([("now", None)])], [toolpath_calls([("now", {})])], none_args_equal_empty=equal
    )
    assert ours.score == (1.0 if equal else 0.0)
    wildcard = trajectory_match.tool_trajectory_avg_score(
        [toolpath_calls([("now", {"x": 1})])],
        [toolpath_calls([("now", None)])],
        null_args_wildcard=True,
        none_args_equal_empty=equal,
    )
    assert wildcard.score == 1.0  # a wildcard reference stays one


def test_calls_adk_sends_its_client_count_as_the_installed_adk_counts_them():
    """``adk_request_confirmation`` is left out of the trajectory and the tool-call count where the installed ADK
    leaves it out (google-adk 2.15), and kept where it keeps it."""
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY

    from toolpath.evaluation.evalsets import adk_models
    from toolpath.evaluation.evalsets.conversions import efficiency

    asked = [("adk_request_confirmation", {"originalFunctionCall": {"name": "pay"}}), ("pay", {"amount": 5})]
    theirs = adk_invocation("q", None, asked)
    count = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(EvalMetric(metric_name="tool_call_count_v1"))
    adk_count = count.evaluate_invocations([theirs], None).overall_score
    ours = efficiency(adk_models.Invocation.model_validate(theirs.model_dump(mode="json")))
    assert ours["tool_call_count_v1"] == adk_count == 2.0 - len(client_call_names() & {"adk_request_confirmation"})
    adk = evaluate(trajectory_evaluator(), [theirs], [adk_invocation("q", None, [("pay", {"amount": 5})])])
    score = trajectory_match.tool_trajectory_avg_score(
        [toolpath_calls(asked)], [toolpath_calls([("pay", {"amount": 5})])]
    )
    assert score.score == adk.overall_score
