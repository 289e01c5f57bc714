"""Datasets: rows of columns as SPEC §5 (``prompt``, ``reference``, ``response``, ``predicted_trajectory``,
``reference_trajectory``, …), from a JSONL or CSV file, a list of dicts, or a pandas DataFrame. ADK eval sets
are read by :mod:`toolpath.datasets.adk`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from toolpath.datasets.csvfile import read_csv
from toolpath.datasets.jsonl import read_jsonl
from toolpath.errors import DatasetError

__all__ = ["load_rows", "read_csv", "read_jsonl"]


def load_rows(dataset: Any, metric_column_mapping: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Rows of ``dataset`` as plain dicts; ``metric_column_mapping`` maps a metric's column name to the
    dataset's (``{"reference_trajectory": "expected_tools"}``)."""
    if isinstance(dataset, str | Path):
        path = Path(dataset)
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".ndjson"):
            rows = read_jsonl(path)
        elif suffix == ".csv":
            rows = read_csv(path)
        else:
            raise DatasetError(f"{path}: unsupported dataset format {suffix or '(no extension)'!r}; use .jsonl or .csv")
    elif hasattr(dataset, "to_dict") and hasattr(dataset, "columns"):  # a pandas DataFrame
        rows = dataset.to_dict(orient="records")
    elif isinstance(dataset, Iterable) and not isinstance(dataset, Mapping):
        rows = []
        for i, row in enumerate(dataset):
            if not isinstance(row, Mapping):
                raise DatasetError(f"dataset row {i}: expected a mapping, got {type(row).__name__}")
            rows.append(dict(row))
    else:
        raise DatasetError(f"cannot read a dataset from {type(dataset).__name__}")
    if metric_column_mapping:
        for row in rows:
            for wanted, present in metric_column_mapping.items():
                if present in row and wanted not in row:
                    row[wanted] = row[present]
    return rows
