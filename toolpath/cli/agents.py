"""``--agent``: the object a ``module:attribute`` reference names, and the agent toolpath runs from it."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from typing import Any

from toolpath.errors import ConfigError


def load_object(reference: str) -> Any:
    """Import ``module:attr`` (``attr`` may be dotted), or a whole module or package (``my_agent``,
    ``my_agent.agent``: an agent folder by its name, run from the folder that holds it); the working directory is
    importable. A file path is refused, never imported."""
    module_name, sep, attr = reference.partition(":")
    if sep and (not module_name or not attr):
        raise ConfigError(f"--agent {reference!r}: expected module:attribute, e.g. my_app.agent:answer")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    if "/" in module_name or "\\" in module_name or module_name.endswith(".py"):
        # a path is never imported: importing a file runs its top-level code, whatever it is
        hint = Path(module_name).name.removesuffix(".py") or "my_agent"
        raise ConfigError(
            f"--agent {reference!r}: give a module (module or module:attribute), not a file path; from the folder "
            f"that holds it, --agent {hint}"
        )
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--agent {reference!r}: cannot import {module_name!r} ({exc})") from None
    for part in attr.split(".") if attr else ():
        if not hasattr(obj, part):
            raise ConfigError(f"--agent {reference!r}: {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def load_agent(reference: str) -> Any:
    """The :class:`~toolpath.evaluation.targets.Target` of ``--agent``: checked before anything is run or created,
    so an object toolpath cannot run is one error line."""
    from toolpath.evaluation.targets import resolve_target

    obj = load_object(reference)
    try:
        return resolve_target(obj)
    except ConfigError as exc:
        _, colon, attr = reference.partition(":")
        if colon and isinstance(obj, types.ModuleType):  # module:attr named a module, e.g. one it imported
            raise ConfigError(
                f"--agent {reference!r}: {attr} is the module {obj.__name__}, not an agent (it exposes no "
                "root_agent); name a function, a LangChain Runnable or an ADK agent"
            ) from None
        raise ConfigError(f"--agent {reference!r}: {exc}") from None
