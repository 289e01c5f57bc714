"""Vertex AI's ``EvalTask`` and ``EvalResult`` over :func:`toolpath.evaluate`.

``EvalTask(dataset=…, metrics=[…], experiment=…, metric_column_mapping=…).evaluate(runnable=…)`` scores the
dataset as ``toolpath.evaluate`` does — the same metrics, judge, agent runs under tracing — and answers as
Vertex AI does: ``summary_metrics`` (``row_count``, ``{metric}/mean``, ``{metric}/std``, NaN where there is no
value) and ``metrics_table``, a pandas ``DataFrame`` when pandas is installed (a list of dicts otherwise).

What needs Google Cloud is mapped or refused: an experiment is a named run in toolpath's store (its runs are
``experiment_run_name``), ``output_uri_prefix`` is a local directory, a Gemini model is asked through
google-genai, and a ``gs://`` or ``bq://`` dataset or a pairwise rubric-based metric is one clear error before
anything runs.
"""

from __future__ import annotations

import copy
import json
import math
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolpath import tracing
from toolpath.datasets import load_rows
from toolpath.errors import ConfigError, DatasetError, MetricError
from toolpath.evaluation.runner import evaluate as toolpath_evaluate
from toolpath.judges.vertex import VARIABLE, PairwiseChoice
from toolpath.private_files import write_private
from toolpath.store.store import Store
from toolpath.vertex.generated_responses import generate
from toolpath.vertex.model_based import PairwiseMetric
from toolpath.vertex.raw_output import wants_raw_output
from toolpath.vertex.rubric_metrics import UNSUPPORTED, RubricBasedMetric
from toolpath.vertex.task_columns import check_columns, check_metric_list, written_columns

__all__ = ["EvalResult", "EvalTask", "PromptTemplate"]

CLOUD_PREFIXES = ("gs://", "bq://")


class PromptTemplate:
    """Vertex AI's ``PromptTemplate``: a prompt with ``{variable}`` placeholders, filled from a row's columns."""

    def __init__(self, template: str) -> None:
        self.template = str(template)
        self.variables = set(VARIABLE.findall(self.template))

    def assemble(self, **values: Any) -> PromptTemplate:
        """A template with the given variables filled in; a name it does not have is a :class:`ConfigError`."""
        text = self.template
        for name, value in values.items():
            if name not in self.variables:
                raise ConfigError(f"prompt template has no variable {name!r}; it has {sorted(self.variables)}")
            text = text.replace("{" + name + "}", str(value))
        return PromptTemplate(text)

    def __str__(self) -> str:
        return self.template

    def __repr__(self) -> str:
        return f"PromptTemplate({self.template!r})"


@dataclass
class EvalResult:
    """Vertex AI's ``EvalResult``: ``summary_metrics``, ``metrics_table`` (a pandas ``DataFrame``, or a list of
    dicts without pandas) and ``metadata`` (the experiment and its run, when the task has an experiment).
    ``run_id`` is the run's id in toolpath (in the store when it was saved)."""

    summary_metrics: dict[str, Any]
    metrics_table: Any = None
    metadata: dict[str, str] | None = None
    run_id: str = ""


class EvalTask:
    """Vertex AI's ``EvalTask``: a dataset and the metrics to score it with.

    ``dataset`` is a pandas ``DataFrame``, a dict of columns, a list of row dicts, or a local JSONL, CSV or JSON
    file (Vertex-style rows, or rows holding ``agent_data``); ``metrics`` are metric names (toolpath's
    catalog, which holds Vertex AI's) and metric objects (:mod:`toolpath.vertex.metrics`, ``CustomMetric``).
    ``experiment`` names the runs: each :meth:`evaluate` is saved as a run, ``experiment_run_name`` its id, in
    the store of ``toolpath.init()`` (or ``$TOOLPATH_STORE``, or ``sqlite:///toolpath.db``).
    ``metric_column_mapping`` maps a metric's column to the dataset's (``{"response": "model_1_response"}``).
    ``autorater_config`` sets the judge model and samples of model-based metrics that set none.
    """

    def __init__(
        self,
        *,
        dataset: Any,
        metrics: Sequence[Any],
        experiment: str | None = None,
        metric_column_mapping: Mapping[str, str] | None = None,
        output_uri_prefix: str | None = "",
        autorater_config: Any = None,
    ) -> None:
        self._rows, self._dataset_name = task_rows(dataset)
        self._metrics = list(metrics)
        for metric in self._metrics:
            _check_metric(metric)
        if experiment is not None and (not isinstance(experiment, str) or not experiment):
            raise ConfigError(f"experiment must be a non-empty string, got {experiment!r}")
        self._experiment = experiment
        self._metric_column_mapping = dict(metric_column_mapping or {})
        if output_uri_prefix and str(output_uri_prefix).startswith("gs://"):
            raise ConfigError(
                f"output_uri_prefix {output_uri_prefix}: results are written to Cloud Storage by Vertex AI only; "
                "give a local directory"
            )
        self.output_uri_prefix = output_uri_prefix or ""
        self._autorater_config = autorater_config

    @property
    def dataset(self) -> Any:
        """The rows, as a pandas ``DataFrame`` when pandas is installed."""
        return as_table(self._rows)

    @property
    def metrics(self) -> list[Any]:
        return self._metrics

    @property
    def experiment(self) -> str | None:
        return self._experiment

    @property
    def autorater_config(self) -> Any:
        return self._autorater_config

    def evaluate(
        self,
        *,
        model: Any = None,
        runnable: Any = None,
        prompt_template: PromptTemplate | str | None = None,
        experiment_run_name: str | None = None,
        response_column_name: str | None = None,
        baseline_model_response_column_name: str | None = None,
        evaluation_service_qps: float | None = None,
        retry_timeout: float = 120.0,
        output_file_name: str | None = "",
    ) -> EvalResult:
        """Score the dataset: with ``runnable`` (any agent ``toolpath.evaluate`` runs: a function returning text
        or Vertex AI's ``{"response", "predicted_trajectory"}``, an object with ``.query()``, a LangChain
        runnable, an ADK agent) each row's ``prompt`` is run under tracing first, and ``latency_in_seconds`` and
        ``failure`` are scored too; with ``model`` (a function ``prompt -> text``, a Gemini model name or Vertex
        AI's ``GenerativeModel``) each row's ``response`` is generated first. ``prompt_template`` builds each
        row's ``prompt`` from its columns first.

        ``evaluation_service_qps`` and ``retry_timeout`` pace Vertex AI's remote service and are accepted so
        Vertex code runs unchanged; toolpath's judge is paced by its own settings (docs/vertex.md).
        """
        if model is not None and runnable is not None:
            raise ConfigError("give model= or runnable=, not both: each generates the responses")
        experiment = self._experiment
        if experiment_run_name is not None and experiment is None:
            raise ConfigError("experiment_run_name needs an experiment: EvalTask(..., experiment='name')")
        check_metric_list(self._metrics)
        rows = copy.deepcopy(self._rows)
        mapping = dict(self._metric_column_mapping)
        for column, key in ((response_column_name, "response"), (baseline_model_response_column_name, None)):
            if column is not None:
                if not any(column in row for row in rows):
                    raise DatasetError(f"response column {column!r} is not in the dataset")
                mapping[key or "baseline_model_response"] = column
        if prompt_template is not None:
            assemble_prompts(rows, prompt_template)
        written = written_columns(runnable=runnable, model=model, metrics=self._metrics)
        check_columns(rows, self._metrics, mapping, written)
        for metric in self._metrics:  # rubrics are written before any response is generated, as in Vertex AI
            if isinstance(metric, RubricBasedMetric):
                metric.write_rubrics(rows)
        metrics = [
            _task_metric(m.critique_metric if isinstance(m, RubricBasedMetric) else m, self._autorater_config)
            for m in self._metrics
        ]
        if model is not None:
            generate_column(rows, model, "response", mapping, "model")
        for metric in metrics:
            if isinstance(metric, PairwiseMetric) and metric.baseline_model is not None:
                generate_column(rows, metric.baseline_model, "baseline_model_response", mapping, "baseline_model")
        store, run_id = None, None
        if experiment is not None:
            active = tracing.current()
            store = active.store if active is not None and active.store is not None else Store()
            run_id = experiment_run_name or str(uuid.uuid4())
        result = toolpath_evaluate(
            rows,
            metrics,
            runnable=runnable,
            metric_column_mapping=mapping,
            store=store,
            dataset_name=self._dataset_name,
            run_id=run_id,
            experiment=experiment,
        )
        pairwise = [m.name for m in metrics if isinstance(m, PairwiseMetric)]
        table = [_vertex_row(row, pairwise) for row in result.metrics_table]
        summary = dict(result.summary_metrics)
        for metric in metrics:
            if isinstance(metric, PairwiseMetric):  # Vertex AI sums a pairwise metric up by its win rates alone
                summary.pop(f"{metric.name}/mean", None)
                summary.pop(f"{metric.name}/std", None)
                if wants_raw_output(metric.custom_output_config):
                    summary.update(verdict_win_rates(table, metric.name))
        summary = {key: math.nan if value is None else value for key, value in summary.items()}
        metadata = {"experiment": experiment, "experiment_run": run_id or ""} if experiment is not None else None
        out = EvalResult(summary, as_table(table), metadata, result.run_id)
        if self.output_uri_prefix:
            write_results(Path(self.output_uri_prefix), output_file_name or f"eval_results_{result.run_id}.csv", out)
        return out

    def display_runs(self) -> Any:
        """The experiment's runs in the store (newest first), as a ``DataFrame`` when pandas is installed."""
        if self._experiment is None:
            raise ConfigError("this EvalTask has no experiment")
        active = tracing.current()
        store = active.store if active is not None and active.store is not None else Store()
        runs = [
            {"run_id": run["run_id"], "started_at": run["started_at"], **run["summary"]}
            for run in store.list_eval_runs(limit=None)
            if (run.get("metrics") or {}).get("experiment") == self._experiment
        ]
        return as_table(runs)


def task_rows(dataset: Any) -> tuple[list[dict[str, Any]], str]:
    """The dataset's rows (each checked as :func:`toolpath.datasets.load_rows` checks them) and its name."""
    if isinstance(dataset, str | Path) and str(dataset).startswith(CLOUD_PREFIXES):
        raise DatasetError(
            f"{dataset}: Cloud Storage and BigQuery datasets are read by Vertex AI only; copy it to a local JSONL "
            "or CSV file (gcloud storage cp, bq extract) and pass its path"
        )
    if isinstance(dataset, Mapping):  # a dict of columns, as pandas.DataFrame(dataset) reads it
        lengths = {len(v) if isinstance(v, list | tuple) else -1 for v in dataset.values()}
        if not dataset or -1 in lengths or len(lengths) != 1:
            raise DatasetError("a dataset given as a dict must map each column name to a list, all of one length")
        count = lengths.pop()
        rows = [{column: values[i] for column, values in dataset.items()} for i in range(count)]
        return load_rows(rows), f"<dict of {count} rows>"
    name = str(dataset) if isinstance(dataset, str | Path) else f"<{type(dataset).__name__}>"
    rows = load_rows(dataset)
    return rows, name if isinstance(dataset, str | Path) else f"<{type(dataset).__name__} of {len(rows)} rows>"


def assemble_prompts(rows: list[dict[str, Any]], prompt_template: PromptTemplate | str) -> None:
    """Set each row's ``prompt`` from the template and the row's columns."""
    template = prompt_template if isinstance(prompt_template, PromptTemplate) else PromptTemplate(prompt_template)
    if not template.template.strip():
        raise ConfigError("prompt_template is empty")
    for index, row in enumerate(rows):
        missing = sorted(v for v in template.variables if v not in row)
        if missing:
            raise DatasetError(f"dataset row {index}: prompt_template needs column(s) {', '.join(missing)}")
        row["prompt"] = str(template.assemble(**{v: row[v] for v in template.variables}))


def generate_column(
    rows: list[dict[str, Any]], model: Any, column: str, mapping: Mapping[str, str], option: str
) -> None:
    """Fill ``column`` of every row with ``model``'s response to its ``prompt``
    (:func:`toolpath.vertex.generated_responses.generate`); a call that fails leaves the cell empty and the
    reason in the row's ``error``. A row that already has the column is an error, as in Vertex AI."""
    if any(column in row or mapping.get(column) in row for row in rows):
        raise DatasetError(f"the dataset already has {column!r}; remove {option}= or the column")
    for index, row in enumerate(rows):
        if not isinstance(row.get("prompt"), str):
            raise DatasetError(f"dataset row {index}: {option}= needs a 'prompt' string (or a prompt_template)")
    for row, (text, error) in zip(rows, generate(model, [row["prompt"] for row in rows], option), strict=True):
        row[column] = text
        if error is not None:
            row["error"] = error


def _check_metric(metric: Any) -> None:
    refusal = metric.refusal() if isinstance(metric, RubricBasedMetric) else None
    if refusal is not None:
        raise refusal
    if metric == "rubric_based_instruction_following":  # Vertex AI's service-side rubric metric
        raise MetricError(UNSUPPORTED.format(name=metric))
    module = type(metric).__module__
    if module.startswith("vertexai"):
        raise MetricError(
            f"{type(metric).__name__} is vertexai's own class; import it from toolpath.vertex (or "
            "toolpath.vertex.metrics) to score it here"
        )


def _task_metric(metric: Any, autorater_config: Any) -> Any:
    with_autorater: Callable[[Any], Any] | None = getattr(metric, "with_autorater", None)
    return with_autorater(autorater_config) if with_autorater is not None else metric


def _vertex_row(row: dict[str, Any], pairwise: Sequence[str]) -> dict[str, Any]:
    """A table row as Vertex AI writes it: a pairwise tie is ``TIE``."""
    for name in pairwise:
        if row.get(f"{name}/pairwise_choice") == PairwiseChoice.SAME:
            row[f"{name}/pairwise_choice"] = "TIE"
    return row


def verdict_win_rates(table: Sequence[Mapping[str, Any]], name: str) -> dict[str, float]:
    """Win rates of a pairwise metric whose choices a parser wrote: Vertex AI's rubric parser writes verdict
    sentences, which Vertex AI's summary counts as wins (read from the installed package), beside the
    ``CANDIDATE`` / ``BASELINE`` of the others. Shares of all rows, as in Vertex AI."""
    candidate, baseline = {str(PairwiseChoice.CANDIDATE)}, {str(PairwiseChoice.BASELINE)}
    try:
        from vertexai.preview.evaluation.utils import RATING_TO_VERDICT
    except ImportError:
        pass
    else:
        candidate |= {RATING_TO_VERDICT[r] for r in ("B>>A", "A<<B", "B>A", "A<B") if r in RATING_TO_VERDICT}
        baseline |= {RATING_TO_VERDICT[r] for r in ("A>>B", "B<<A", "B<A", "A>B") if r in RATING_TO_VERDICT}
    choices = [row.get(f"{name}/pairwise_choice") for row in table]
    if not choices:
        return {}
    return {
        f"{name}/candidate_model_win_rate": sum(c in candidate for c in choices) / len(choices),
        f"{name}/baseline_model_win_rate": sum(c in baseline for c in choices) / len(choices),
    }


def as_table(rows: list[dict[str, Any]]) -> Any:
    """``rows`` as a pandas ``DataFrame`` when pandas is installed, else as they are."""
    try:
        import pandas as pd  # optional
    except ImportError:
        return rows
    return pd.DataFrame(rows)


def write_results(prefix: Path, file_name: str, result: EvalResult) -> None:
    """Vertex AI's layout under a local directory: ``<prefix>/<name>/<file_name>`` (the table, CSV or JSONL by
    its suffix) and ``<prefix>/<name>/summary_metrics.json``."""
    if not re.fullmatch(r"[\w.-]+\.(csv|jsonl)", file_name):
        raise ConfigError(f"output_file_name {file_name!r}: give a file name ending .csv or .jsonl")
    folder = prefix / file_name.rsplit(".", 1)[0]
    folder.mkdir(parents=True, exist_ok=True)
    table = result.metrics_table
    rows = table.to_dict(orient="records") if hasattr(table, "to_dict") else list(table or [])
    target = folder / file_name
    if file_name.endswith(".jsonl"):
        write_private(target, "".join(json.dumps(r, default=str) + "\n" for r in rows))
    elif hasattr(table, "to_csv"):
        write_private(target, table.to_csv(index=False))
    else:
        import csv
        import io

        columns = list(dict.fromkeys(k for r in rows for k in r))
        out = io.StringIO(newline="")
        writer = csv.DictWriter(out, columns)
        writer.writeheader()
        writer.writerows(rows)
        write_private(target, out.getvalue())
    summary = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in result.summary_metrics.items()}
    write_private(folder / "summary_metrics.json", json.dumps(summary, indent=2, default=str) + "\n")
