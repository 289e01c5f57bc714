"""CSV datasets: a header row, then one row per instance. Trajectory cells hold JSON text; empty cells are
missing values. The cells are apart by commas, or by what the header is apart by when it has no comma: a
semicolon (what spreadsheets write where a comma is the decimal mark), a tab or a bar."""

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
            header = handle.readline()
            handle.seek(0)
            reader = csv.DictReader(handle, delimiter=delimiter_of(header))
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


DELIMITERS = (",", ";", "\t", "|")


def delimiter_of(header: str) -> str:
    """The delimiter of a CSV file, from its header line: a comma, unless the header has none outside quotes and
    holds one of the other :data:`DELIMITERS` (the most frequent)."""
    counts = dict.fromkeys(DELIMITERS, 0)
    quoted = False
    for ch in header:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in counts:
            counts[ch] += 1
    if counts[","]:
        return ","
    best = max(DELIMITERS[1:], key=lambda d: counts[d])
    return best if counts[best] else ","
