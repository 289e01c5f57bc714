"""The ``toolpath`` command as users run it from a shell in a working directory: in this process through click's
``CliRunner`` (fast: nothing to import again), or as a real process for the few smoke tests that need one; and a
user's Python script, run in this process."""

from __future__ import annotations

import contextlib
import os
import runpy
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console

from toolpath.cli import main

COLUMNS = "200"
"""The terminal width the command's tables are laid out for."""


@dataclass(frozen=True)
class CliResult:
    """What a shell would see: the exit code, standard output and standard error."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> CliResult:
    """``toolpath ARGS`` in ``cwd``, in this process: ``toolpath.cli.main`` (the console script's entry point, which
    turns a ``ToolpathError`` into one ``error:`` line and exit 2) under ``CliRunner``'s isolation of the standard
    streams and the environment (``$TOOLPATH_STORE`` unset, 200 columns, ``env`` on top), with a console made in
    that environment. Modules the command imports from ``cwd`` (``--agent my_agent:answer``) are forgotten
    afterwards, as a new process would."""
    environment: dict[str, str | None] = {"COLUMNS": COLUMNS, "TOOLPATH_STORE": None, **(env or {})}
    code = 0
    with (
        _fresh_imports_from(cwd),
        contextlib.chdir(cwd),
        CliRunner().isolation(env=environment) as (out, err, _),
        _new_console(),
    ):
        try:
            main(list(args))
        except SystemExit as stopped:
            code = stopped.code if isinstance(stopped.code, int) else 0 if stopped.code is None else 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return CliResult(code, stdout, stderr)


def run_script(cwd: Path, script: str, *args: str) -> None:
    """``python SCRIPT ARGS`` in ``cwd``, in this process: ``cwd`` importable (as Python makes a script's folder),
    modules imported from it forgotten afterwards. What the script raises, this raises."""
    argv = sys.argv
    with _fresh_imports_from(cwd), contextlib.chdir(cwd):
        sys.path.insert(0, str(cwd))
        sys.argv = [script, *args]
        try:
            runpy.run_path(script, run_name="__main__")
        finally:
            sys.argv = argv


@contextlib.contextmanager
def _new_console() -> Iterator[None]:
    """The commands' shared rich console, made again as the command's own process would make it at start-up (it
    fixes its width from ``$COLUMNS`` then): the one made when this process imported the CLI has whatever width
    this process had."""
    from toolpath.cli.output import make_console

    fresh = make_console()
    shared = [
        (module, module.console)
        for name, module in list(sys.modules.items())
        if name.startswith("toolpath.") and isinstance(getattr(module, "console", None), Console)
    ]
    for module, _ in shared:
        module.console = fresh
    try:
        yield
    finally:
        for module, original in shared:
            module.console = original


@contextlib.contextmanager
def _fresh_imports_from(cwd: Path) -> Iterator[None]:
    path, before = list(sys.path), set(sys.modules)
    try:
        yield
    finally:
        sys.path[:] = path
        root = cwd.resolve()
        for name in set(sys.modules) - before:
            if name.split(".")[0] in ("toolpath", "tests"):
                continue
            location = getattr(sys.modules[name], "__file__", None)
            if location and Path(location).resolve().is_relative_to(root):
                del sys.modules[name]


def run_process(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """``toolpath ARGS`` as a real process in ``cwd`` (``$TOOLPATH_STORE`` unset, 200 columns, ``env`` on top)."""
    full_env = {**os.environ, "COLUMNS": COLUMNS, **(env or {})}
    full_env.pop("TOOLPATH_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "toolpath.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=full_env,
    )
