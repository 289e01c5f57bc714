"""JSON Lines datasets: one JSON object per line; blank lines are skipped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolpath.errors import DatasetError
from toolpath.jsontext import strict_loads


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read every row; a line that is not a JSON object is an error naming the file and line."""
    return [row for _, row in iter_jsonl(path)]


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every row with its line number, read as it is asked for (one line in memory at a time)."""
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror})") from None
    loads = strict_loads
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                try:
                    row = loads(line)
                except json.JSONDecodeError as exc:
                    if not line.strip():
                        continue
                    raise DatasetError(f"{path}:{number}: not valid JSON ({exc.msg}, column {exc.colno})") from None
                if row.__class__ is not dict:
                    raise DatasetError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
                yield number, row
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
