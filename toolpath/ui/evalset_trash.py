"""Deleting an eval set from the UI, with undo: the file moves to ``.deleted/`` in the eval-set folder (out of the
list, since only the folder's own ``*.evalset.json`` are listed), and moves back on restore. Nothing is erased: an
eval set deleted twice keeps the newest copy, and a restore never replaces an eval set made since under its name.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from toolpath.errors import ConfigError
from toolpath.evaluation.evalsets.files import EVALSET_SUFFIX
from toolpath.evaluation.evalsets.folder import EvalSetFiles

TRASH = ".deleted"


def trash_of(files: EvalSetFiles) -> Path:
    return files.folder / TRASH


def deleted_names(files: EvalSetFiles) -> list[str]:
    """The eval sets deleted from the UI that can be restored, newest first."""
    trash = trash_of(files)
    if not trash.is_dir():
        return []
    found = sorted(trash.glob(f"*{EVALSET_SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
    return [p.name.removesuffix(EVALSET_SUFFIX) for p in found]


def delete(files: EvalSetFiles, name: str) -> None:
    path = files.path(name)
    if not path.is_file():
        raise FileNotFoundError(name)
    trash = trash_of(files)
    trash.mkdir(exist_ok=True)
    os.replace(path, trash / path.name)
    os.utime(trash / path.name)  # the newest deleted first in the list


def restore(files: EvalSetFiles, name: str) -> None:
    path = files.path(name)
    kept = trash_of(files) / path.name
    if not kept.is_file():
        raise FileNotFoundError(name)
    if path.exists():
        raise ConfigError(f"eval set {name!r} exists again: rename or delete it before restoring the deleted one")
    os.replace(kept, path)


def _files(request: Request) -> EvalSetFiles:
    files: EvalSetFiles = request.app.state.ui.evalsets
    return files


async def _move(request: Request, move: Callable[[EvalSetFiles, str], Any], missing: str, done: str) -> Response:
    """Move the eval set named in the path with ``move`` (to the trash or back); 404 naming it if it isn't there."""
    name = request.path_params["name"]
    try:
        await run_in_threadpool(move, _files(request), name)
    except FileNotFoundError:
        raise HTTPException(404, missing.format(name=name)) from None
    return RedirectResponse(done.format(name=name), status_code=303)


async def delete_page(request: Request) -> Response:
    return await _move(request, delete, "no eval set {name!r}", "/evalsets?deleted={name}")


async def restore_page(request: Request) -> Response:
    return await _move(request, restore, "no deleted eval set {name!r} to restore", "/evalsets/{name}?restored=1")


def routes() -> list[Route]:
    return [
        Route("/evalsets/{name}/delete", delete_page, methods=["POST"]),
        Route("/evalsets/{name}/restore", restore_page, methods=["POST"]),
    ]
