"""JSON Lines datasets: one JSON object per line; blank lines are skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolpath.errors import DatasetError


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read every row; a line that is not a JSON object is an error naming the file and line."""
    return [row for _, row in numbered_jsonl(path)]


def numbered_jsonl(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """Every row with its line number."""
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror})") from None
    rows: list[tuple[int, dict[str, Any]]] = []
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"{path}:{number}: not valid JSON ({exc.msg}, column {exc.colno})") from None
                if not isinstance(row, dict):
                    raise DatasetError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
                rows.append((number, row))
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return rows
