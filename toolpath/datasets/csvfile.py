"""CSV datasets: a header row, then one row per instance. Trajectory cells hold JSON text; empty cells are
missing values."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolpath.errors import DatasetError


def read_csv(path: str | Path) -> list[dict[str, Any]]:
    return [row for _, row in iter_csv(path)]


def iter_csv(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every row with the line it starts on, read as it is asked for."""
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8-sig", newline="")
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror})") from None
    with handle:
        try:
            reader = csv.DictReader(handle)
            if not reader.fieldnames:
                raise DatasetError(f"{path}: empty file (a header row is needed)")
            start = reader.line_num + 1
            for row in reader:
                if None in row:
                    raise DatasetError(f"{path}:{start}: more cells than the header has columns")
                yield start, {key: (value if value != "" else None) for key, value in row.items()}
                start = reader.line_num + 1
        except csv.Error as exc:
            raise DatasetError(f"{path}:{reader.line_num}: {exc}") from None
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
