"""Datasets: rows of columns as SPEC §5 (``prompt``, ``reference``, ``response``, ``predicted_trajectory``,
``reference_trajectory``, …), from a JSONL, CSV or JSON file, a list of dicts, or a pandas DataFrame. ADK eval
sets are read by :mod:`toolpath.datasets.adk`.

Whatever the source, a dataset is checked as it is loaded: no rows at all, or a trajectory cell that is not a
list of tool calls (bad JSON, a plain string, a call without ``tool_name``), is a :class:`DatasetError` naming the
file, line (or row) and column — never a row quietly left unscored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from toolpath.datasets.csvfile import numbered_csv, read_csv
from toolpath.datasets.jsonfile import read_json
from toolpath.datasets.jsonl import numbered_jsonl, read_jsonl
from toolpath.errors import DatasetError
from toolpath.model import TRAJECTORY_COLUMNS, parse_trajectory

__all__ = ["load_rows", "read_csv", "read_json", "read_jsonl"]

SUFFIXES = (".jsonl", ".ndjson", ".csv", ".json")


def load_rows(dataset: Any, metric_column_mapping: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Rows of ``dataset`` as plain dicts; ``metric_column_mapping`` maps a metric's column name to the
    dataset's (``{"reference_trajectory": "expected_tools"}``)."""
    name = "dataset"
    if isinstance(dataset, str | Path):
        path = Path(dataset)
        name = str(path)
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".ndjson"):
            located = [(f"{path}:{line}", row) for line, row in numbered_jsonl(path)]
        elif suffix == ".csv":
            located = [(f"{path}:{line}", row) for line, row in numbered_csv(path)]
        elif suffix == ".json":
            located = [(f"{path}: row {n}", row) for n, row in enumerate(read_json(path), start=1)]
        else:
            known = ", ".join(SUFFIXES)
            raise DatasetError(f"{path}: unsupported dataset format {suffix or '(no extension)'!r}; use {known}")
    elif hasattr(dataset, "to_dict") and hasattr(dataset, "columns"):  # a pandas DataFrame
        located = [(f"dataset row {i}", row) for i, row in enumerate(dataset.to_dict(orient="records"))]
    elif isinstance(dataset, Iterable) and not isinstance(dataset, Mapping):
        located = []
        for i, row in enumerate(dataset):
            if not isinstance(row, Mapping):
                raise DatasetError(f"dataset row {i}: expected a mapping, got {type(row).__name__}")
            located.append((f"dataset row {i}", dict(row)))
    else:
        raise DatasetError(f"cannot read a dataset from {type(dataset).__name__}")
    if not located:
        raise DatasetError(f"{name}: no rows")
    for where, row in located:
        for wanted, present in (metric_column_mapping or {}).items():
            if present in row and wanted not in row:
                row[wanted] = row[present]
        check_trajectories(row, where)
    return [row for _, row in located]


def check_trajectories(row: Mapping[str, Any], where: str) -> None:
    """A :class:`DatasetError` naming ``where`` and the column when a trajectory cell is not a list of calls."""
    for column in TRAJECTORY_COLUMNS:
        if row.get(column) is not None:
            try:
                parse_trajectory(row[column], where=column)
            except DatasetError as exc:
                raise DatasetError(f"{where}: {exc}") from None
