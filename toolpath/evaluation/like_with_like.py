"""Scores of what the agent did, whatever redaction kept (docs/evaluation.md, "Redaction and scores").

Two rules:

- **A run toolpath executes** (``eval --agent``, ``toolpath.evaluate(runnable=…)``, eval sets, simulated
  conversations) is scored on the values the agent produced, rebuilt in memory before redaction
  (:attr:`~toolpath.evaluation.outcomes.AgentOutcome.produced`): the computed metrics read a
  :class:`ProducedView`. Whatever leaves the process — the stored row, the JSON output, a judge's request — is
  the redacted row, and a judge reads it with its references redacted too (:attr:`ProducedView.stored`).
- **Where only the stored, redacted values exist** (online scoring, ``--from-store``, replay's recorded side),
  references are redacted by the store's rules and keyed pseudonyms before they are compared
  (:func:`redact_references`), so that like is compared with like.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from toolpath.metrics.rows import with_parsed_trajectories
from toolpath.model import MetricResult, ToolCall
from toolpath.redact import Redactor
from toolpath.tracer import content
from toolpath.trajectory import Trajectory

REFERENCE_COLUMNS = ("reference", "reference_trajectory", "baseline_model_response")
"""The columns a row's own values are compared with."""


class ProducedView(dict[str, Any]):
    """A row as the computed metrics read it: the values the agent produced, in memory only. :attr:`stored` is the
    row as stored (redacted), with its references redacted the same way: what judges read."""

    stored: Mapping[str, Any]
    redactor: Redactor | None


def scrubber(view: Mapping[str, Any]) -> Callable[[Any], Any] | None:
    """How to redact what a metric says of ``view`` (an explanation may quote an argument) before it is kept:
    ``None`` for a view of stored values. As :func:`scrubbed`: the rules, and every value the view holds under a
    secret key wherever it is quoted."""
    redactor = getattr(view, "redactor", None)
    return None if redactor is None else _cleaner(redactor, [view])


def store_redactor(store: Any, rules: Redactor | None) -> Redactor | None:
    """A redactor with ``rules`` (keys and patterns) and the pseudonym key of ``store`` (``None``: the process's
    own, as the tracer uses without a store): what the store's values went through. ``None`` without rules."""
    if rules is None:
        return None
    key = store.pseudonym_key() if store is not None else rules.pseudonym_key
    return Redactor(rules.keys, dict(rules.patterns), rules.replacement, pseudonym_key=key)


def redact_references(row: Mapping[str, Any], redactor: Redactor | None) -> dict[str, Any]:
    """``row`` with its reference columns redacted by ``redactor`` (the store's rules): compared with stored,
    redacted values, equal values stay equal. Values replaced by ``[REDACTED]`` compare equal whatever they were;
    identifiers and object keys holding a secret become keyed pseudonyms and stay distinct."""
    out = dict(row)
    if redactor is None:
        return out
    for column in REFERENCE_COLUMNS:
        value = out.get(column)
        if isinstance(value, Trajectory):  # parsed already: its calls redacted, a wildcard (null) kept
            out[column] = Trajectory([_redacted_call(call, redactor) for call in value])
        elif value is not None:
            out[column] = redactor.value(value, convert=_plain)
    return out


class RedactedReferences:
    """Golden rows by prompt key, each redacted by the store's rules the first time it is asked for."""

    def __init__(self, key: Callable[[str], str], rules: Redactor | None = None, store: Any = None) -> None:
        """``key``: how prompts compare; ``rules``: the store's redaction rules (with ``store``'s pseudonym key,
        read when first needed), so that references compare with stored values."""
        self._key = key
        self._rules, self._store = rules, store
        self._redactor: Redactor | None = None
        self._redacted: dict[str, Mapping[str, Any]] = {}
        self.by_prompt: dict[str, Mapping[str, Any]] = {}

    def find(self, prompt: str | None) -> Mapping[str, Any] | None:
        """The golden row of ``prompt``, its references redacted by the store's rules."""
        if not self.by_prompt:  # no reference dataset: no prompt to normalise (online, once a turn)
            return None
        key = self._key(prompt) if prompt else None
        row = self.by_prompt.get(key) if key is not None else None
        if row is None or key is None or self._rules is None:
            return row
        if key not in self._redacted:
            if self._redactor is None:
                self._redactor = store_redactor(self._store, self._rules)
            self._redacted[key] = redact_references(row, self._redactor)
        return self._redacted[key]


def _redacted_call(call: ToolCall, redactor: Redactor) -> ToolCall:
    args = None if call.args is None else redactor.value(call.args)
    return call.model_copy(update={"args": args, "result": redactor.value(call.result)})


def produced_view(row: Mapping[str, Any], produced: Mapping[str, Any] | None, redactor: Redactor | None) -> Any:
    """The view the metrics read of ``row`` (as stored) when the agent's own values ``produced`` (the columns of
    :func:`~toolpath.evaluation.outcome_rows.scored_row`) are known: a :class:`ProducedView`; else the row's."""
    if produced is None:
        return with_parsed_trajectories(row)
    view = ProducedView(with_parsed_trajectories({**row, **produced}))
    view.stored = with_parsed_trajectories(redact_references(row, redactor))
    view.redactor = redactor
    return view


def produced_views(
    rows: list[dict[str, Any]], produced: dict[int, dict[str, Any]], redactor: Redactor | None
) -> Iterator[tuple[dict[str, Any], Any]]:
    """``(table row, view)`` for each of ``rows`` (as stored) of an agent's runs, ``produced`` the agent's own values
    by row index (taken out as they are used): the view as :func:`produced_view`; the table row, which is kept and
    shown, gets its references redacted as the agent's values were."""
    for index, row in enumerate(rows):
        view = produced_view(row, produced.pop(index, None), redactor)
        if isinstance(view, ProducedView):
            redacted = redact_references(row, redactor)
            row.update({column: redacted[column] for column in REFERENCE_COLUMNS if column in row})
        yield row, view


def tracer_redactor() -> Redactor | None:
    """The rules (and pseudonym key) the tracer redacted this process's runs with; ``None`` with redaction off."""
    return store_redactor(None, content.policy().redactor)


KEPT_REDACTED = ("prompt", "reference", "reference_trajectory")
"""The columns of a case's stored turn that come from the eval set, not from the (already redacted) run."""


def kept_turns(turns: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """A case's ``turns`` (per run, per turn) as the store keeps them: the prompts and references redacted by the
    tracer's rules, as the run's own values were (an eval set's e-mail address or token is no more kept in clear than
    the agent's)."""
    redactor = tracer_redactor()
    if redactor is None:
        return turns
    return [[{k: redactor.value(v) if k in KEPT_REDACTED else v for k, v in t.items()} for t in run] for run in turns]


def scrubbed(result: MetricResult, redactor: Redactor | None, rows: Sequence[Mapping[str, Any]] = ()) -> MetricResult:
    """``result`` of the agent's unredacted values, its explanation and details redacted for keeping. An
    explanation quotes values out of their place (``token: expected "…", got "…"``), where no rule knows a secret
    key any more: the values ``rows`` hold under secret keys are replaced wherever they are quoted."""
    if redactor is None:
        return result
    clean = _cleaner(redactor, rows)
    details = {key: clean(value) for key, value in result.detail_items()}
    return MetricResult(result.score, clean(result.explanation), details or None)


def _cleaner(redactor: Redactor, rows: Sequence[Mapping[str, Any]]) -> Callable[[Any], Any]:
    """A value (an explanation, a detail) redacted by ``redactor``, and each value ``rows`` hold under a secret key
    replaced wherever it is quoted, as it is or JSON-escaped (the longest first)."""
    found = {v for row in rows for v in _secret_values(row, redactor)}
    escaped = {json.dumps(v, ensure_ascii=False)[1:-1] for v in found} | {json.dumps(v)[1:-1] for v in found}
    secrets = sorted(found | escaped, key=len, reverse=True)

    def clean(value: Any) -> Any:
        value = redactor.value(value)
        if isinstance(value, str):
            for secret in secrets:
                if secret in value:
                    value = value.replace(secret, "[REDACTED]")
        elif isinstance(value, dict | list) and secrets:
            text = json.dumps(value, ensure_ascii=False)
            if any(secret in text for secret in secrets):
                value = json.loads(clean(text))
        return value

    return clean


def _secret_values(value: Any, redactor: Redactor, secret: bool = False) -> Iterator[str]:
    """Every scalar of ``value`` (a row, a call, arguments, at any depth) held under a key the rules keep secret."""
    if isinstance(value, ToolCall):
        value = value.to_item()
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _secret_values(item, redactor, secret or not redactor.plain_key(str(key)))
    elif isinstance(value, list | tuple | Trajectory):
        for item in value:
            yield from _secret_values(item, redactor, secret)
    elif secret and isinstance(value, str | int | float) and not isinstance(value, bool) and len(str(value)) >= 4:
        yield str(value)


def judged_view(view: Mapping[str, Any]) -> Mapping[str, Any]:
    """What a judge reads of ``view``: never the agent's unredacted values (they would leave the process)."""
    return getattr(view, "stored", view)


def _plain(value: Any) -> Any:
    """A reference item that is not JSON (a call record) as plain values redaction can look into."""
    return value.to_item() if isinstance(value, ToolCall) else str(value)
