"""JSON datasets (``eval_dataset.json``, as Vertex AI's public agent datasets come): a JSON list of row objects,
or an object of equal-length column lists (what ``DataFrame.to_dict(orient="list")`` writes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolpath.errors import DatasetError
from toolpath.jsontext import strict_loads


def read_json(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    try:
        data = strict_loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read ({exc})") from None
    if isinstance(data, dict) and "eval_cases" in data:
        raise DatasetError(f"{path}: this is an ADK eval set; name it *.evalset.json to run it as one")
    if isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        lengths = {len(v) for v in data.values()}
        if len(lengths) != 1:
            raise DatasetError(f"{path}: the column lists have different lengths ({', '.join(map(str, lengths))})")
        data = [dict(zip(data, values, strict=True)) for values in zip(*data.values(), strict=True)]
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of rows (objects), got {_kind(data)}")
    for number, row in enumerate(data, start=1):
        if not isinstance(row, dict):
            raise DatasetError(f"{path}: row {number}: expected a JSON object, got {_kind(row)}")
    return data


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
