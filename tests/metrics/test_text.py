"""Response metrics pinned to hand-computed values and to rouge_score itself."""

from __future__ import annotations

import random

import pytest
from rouge_score import rouge_scorer

from toolpath.evaluation.catalog import resolve_metric
from toolpath.evaluation.scoring import score_row
from toolpath.metrics import text
from toolpath.metrics.tokenize import rouge_score_tokens, tokenize


def score(spec: str, response, reference) -> object:
    return resolve_metric(spec).score({"response": response, "reference": reference})


class TestExactAndBleu:
    def test_exact_match_is_character_exact(self):
        assert score("exact_match", "Paris", "Paris").score == 1.0
        assert score("exact_match", "Paris ", "Paris").score == 0.0
        assert score("exact_match", "paris", "Paris").score == 0.0

    def test_bleu_by_hand(self):
        # 1..4-gram precisions 5/6, 3/5, 2/4, 1/3; no brevity penalty
        expected = (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
        assert score("bleu", "the cat sat on the mat", "the cat sat on a mat").score == pytest.approx(expected)
        assert score("bleu", "hello", "hello").score == pytest.approx(1.0)

    @pytest.mark.parametrize("sentence", ["the cat sat on the mat", "Set the office to 22 degrees.", "a b c d e f g"])
    def test_bleu_of_identical_strings_is_exactly_one(self, sentence):
        # sacreBLEU says 100.00000000000004 for some: floating error is clamped, a score never leaves [0, 1]
        assert score("bleu", sentence, sentence).score == 1.0


class TestRouge:
    def test_rouge_1_with_stemmer_by_hand(self):
        # stems: foxes->fox, jumping/jumped->jump, lazy->lazi, dogs->dog; 8 of 9 unigrams shared each way
        result = text.response_match_score(
            ["the quick brown fox jumped over the lazy dog"], ["The quick brown foxes are jumping over lazy dogs"]
        )
        assert result.score == pytest.approx(8 / 9)

    def test_rouge_types_by_hand(self):
        assert score("rouge_1", "a b c d", "a b x d").score == pytest.approx(3 / 4)
        assert score("rouge_2", "a b c d", "a b x d").score == pytest.approx(1 / 3)
        assert score("rouge_l", "a b c d", "a x b d").score == pytest.approx(3 / 4)
        assert score("rouge(rouge_type=rouge3)", "a b c d", "a b c x").score == pytest.approx(1 / 2)

    def test_stemmer_option(self):
        assert score("rouge(rouge_type=rouge1)", "dogs", "dog").score == 0.0
        assert score("rouge(rouge_type=rouge1, use_stemmer=true)", "dogs", "dog").score == 1.0

    def test_rouge_l_sum_splits_on_newlines(self):
        with_split = score("rouge(rouge_type=rougeLsum, split_summaries=false)", "a b\nc d", "c d\na b").score
        assert with_split == pytest.approx(1.0)
        assert score("rouge_l", "a b c d", "c d a b").score == pytest.approx(0.5)

    def test_identical_to_rouge_score_on_english(self):
        rng = random.Random(3)
        words = ["the", "a", "agent", "tool", "called", "running", "runs", "weather", "sunny", "rained", "doors"]
        for rouge_type in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
            for stem in (False, True):
                plain = rouge_scorer.RougeScorer([rouge_type], use_stemmer=stem)
                for _ in range(200):
                    ref = " ".join(rng.choice(words) for _ in range(rng.randint(1, 30))) + ", OK!"
                    resp = " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
                    ours = text.rouge(resp, ref, rouge_type=rouge_type, use_stemmer=stem).score
                    assert ours == plain.score(ref, resp)[rouge_type].fmeasure

    def test_ascii_tokens_equal_rouge_score_tokens(self):
        sample = "Hello, World! It's 20C in São... no: in Paris_France (3 runs)."
        ascii_only = sample.encode("ascii", "ignore").decode()
        assert tokenize(ascii_only, True) == rouge_score_tokens(ascii_only, True)

    def test_non_latin_text_is_not_zero(self):
        assert rouge_scorer.RougeScorer(["rouge1"]).score("今天天气很好", "今天天气很好")["rouge1"].fmeasure == 0.0
        assert text.rouge("今天天气很好", "今天天气很好", rouge_type="rouge1").score == 1.0
        # one ideograph a token: 5 of 6 shared
        assert text.rouge("今天天气很好", "今天天气不好", rouge_type="rouge1").score == pytest.approx(5 / 6)

    def test_cjk_kana_hangul_thai_and_accented_words(self):
        assert tokenize("東京へ行く") == ["東", "京", "へ", "行", "く"]
        assert tokenize("안녕 세계") == ["안", "녕", "세", "계"]
        assert tokenize("สวัสดี") == ["ส", "วั", "ส", "ดี"]  # grapheme clusters
        assert tokenize("Café OLÉ running", use_stemmer=True) == ["café", "olé", "run"]
        assert tokenize("ＡＢＣ１２") == ["abc12"]  # NFKC folds full-width forms
        assert tokenize("iPhone中国") == ["iphone", "中", "国"]

    def test_response_match_score_mean_and_failure_paths(self):
        result = text.response_match_score(["a b", "x"], ["a b", "y"])
        assert result.score == 0.5 and result.details["per_invocation_scores"] == [1.0, 0.0]
        assert text.response_match_score([], []).score is None
        assert text.response_match_score(["a"], ["a", "b"]).score is None

    def test_missing_and_wrong_columns_are_not_scored(self):
        missing = score_row(resolve_metric("rouge_1"), {"response": "a"})
        assert missing.score is None and missing.explanation == "row has no 'reference'"
        wrong = score_row(resolve_metric("bleu"), {"response": 3, "reference": "a"})
        assert wrong.score is None and wrong.explanation == "'response' must be text, got int"

    def test_unknown_rouge_type(self):
        with pytest.raises(ValueError, match="rouge_type"):
            resolve_metric("rouge(rouge_type=rouge10)")
