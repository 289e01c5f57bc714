"""Datasets: rows of columns as docs/spec.md §5 (``prompt``, ``reference``, ``response``, ``predicted_trajectory``,
``reference_trajectory``, …), from a JSONL, CSV or JSON file, a list of dicts, or a pandas DataFrame. ADK eval
sets are read by :mod:`toolpath.evaluation.evalsets.files`. A row holding Google's ``agent_data`` (a multi-turn
agent trace) gets the columns it gives (:mod:`toolpath.datasets.agent_data`).

Whatever the source, a dataset is checked as it is loaded: no rows at all, or a trajectory cell that is not a
list of tool calls (bad JSON, a plain string, a call without ``tool_name``), is a :class:`DatasetError` naming the
file, line (or row) and column — never a row quietly left unscored.

:func:`read_rows` streams a dataset, each row parsed once: JSONL and CSV files are read a line at a time, so
what a caller keeps of the rows is all that stays in memory.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from toolpath.datasets.agent_data import agent_data_columns
from toolpath.datasets.csvfile import iter_csv, read_csv
from toolpath.datasets.jsonfile import read_json
from toolpath.datasets.jsonl import iter_jsonl, read_jsonl
from toolpath.errors import DatasetError
from toolpath.model import TRAJECTORY_COLUMNS
from toolpath.trajectory import Trajectory, parse_trajectory

__all__ = ["load_rows", "read_csv", "read_json", "read_jsonl", "read_rows"]

SUFFIXES = (".jsonl", ".ndjson", ".csv", ".json")

ParsedRow = tuple[dict[str, Any], dict[str, Trajectory]]
"""A row as the dataset gives it (a dict of its own, which the caller may keep and change), and its trajectory
cells parsed."""


def load_rows(dataset: Any, metric_column_mapping: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Rows of ``dataset`` as plain dicts; ``metric_column_mapping`` maps a metric's column name to the
    dataset's (``{"reference_trajectory": "expected_tools"}``)."""
    return [row for row, _ in read_rows(dataset, metric_column_mapping)]


def read_rows(dataset: Any, metric_column_mapping: Mapping[str, str] | None = None) -> Iterator[ParsedRow]:
    """Each row of ``dataset`` with its trajectory cells parsed, as it is read. A file that cannot be read, a
    dataset without rows or a malformed first row raises now; a later malformed row raises when it is reached,
    naming the file and line (or row) and the column."""
    rows = _parsed_rows(dataset, metric_column_mapping)
    first = next(rows)  # the rows end with an error rather than end empty
    return itertools.chain((first,), rows)


def _parsed_rows(dataset: Any, metric_column_mapping: Mapping[str, str] | None) -> Iterator[ParsedRow]:
    name, where, located = _located(dataset)
    mapping = list((metric_column_mapping or {}).items())
    count = 0
    for place, row in located:
        count += 1
        for wanted, present in mapping:
            if present in row and wanted not in row:
                row[wanted] = row[present]
        trace = row.get("agent_data")
        if trace is not None and trace == trace:  # Google's agent trace (not a DataFrame's NaN): its columns
            for column, value in agent_data_columns(trace, where(place)).items():
                given = row.get(column)
                if given is None or given != given:  # absent, null, or a DataFrame's NaN
                    row[column] = value
        parsed: dict[str, Trajectory] = {}
        for column in TRAJECTORY_COLUMNS:
            value = row.get(column)
            if value is not None:
                try:
                    parsed[column] = parse_trajectory(value, where=column)
                except DatasetError as exc:
                    raise DatasetError(f"{where(place)}: {exc}") from None
        yield row, parsed
    if not count:
        raise DatasetError(f"{name}: no rows")


def _located(dataset: Any) -> tuple[str, Callable[[int], str], Iterator[tuple[int, dict[str, Any]]]]:
    """The dataset's name, how a row's place is written, and its rows (each a dict of its own) with their
    places: line numbers in a JSONL or CSV file, positions elsewhere."""
    if isinstance(dataset, str | Path):
        path = Path(dataset)
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".ndjson"):
            return str(path), lambda line: f"{path}:{line}", iter_jsonl(path)
        if suffix == ".csv":
            return str(path), lambda line: f"{path}:{line}", iter_csv(path)
        if suffix == ".json":
            return str(path), lambda n: f"{path}: row {n}", enumerate(read_json(path), start=1)
        known = ", ".join(SUFFIXES)
        raise DatasetError(f"{path}: unsupported dataset format {suffix or '(no extension)'!r}; use {known}")
    if hasattr(dataset, "to_dict") and hasattr(dataset, "columns"):  # a pandas DataFrame
        return "dataset", _row_number, enumerate(dataset.to_dict(orient="records"))
    if isinstance(dataset, Iterable) and not isinstance(dataset, Mapping):
        return "dataset", _row_number, _own_rows(dataset)
    raise DatasetError(f"cannot read a dataset from {type(dataset).__name__}")


def _row_number(index: int) -> str:
    return f"dataset row {index}"


def _own_rows(rows: Iterable[Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows given in memory, each copied (the caller's dicts are left as they are)."""
    for index, row in enumerate(rows):
        if row.__class__ is not dict and not isinstance(row, Mapping):
            raise DatasetError(f"dataset row {index}: expected a mapping, got {type(row).__name__}")
        yield index, dict(row)
