"""Our code and text are our own: no long line of google-adk's prompts is copied into the package, the docs or
the tests. ADK's prompt texts are read from the installed google-adk at run time (here: at test time, from its
source files, so this file holds none of them either)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("toolpath", "docs", "tests")
TEXT_SUFFIXES = {".py", ".md", ".txt", ".html", ".js", ".css", ".json", ".jsonl", ".toml", ".yml", ".yaml", ".ini"}
ADK_PROMPT_MODULES = (
    "google.adk.evaluation.simulation.llm_backed_user_simulator_prompts",
    "google.adk.evaluation.simulation.per_turn_user_simulator_quality_prompts",
)
LONG = 60


def adk_sentences(module: str) -> set[str]:
    """The lines longer than ``LONG`` characters of the module's string constants: its prompt templates."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"{module} is not installed"
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    strings = (node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str))
    return {line.strip() for text in strings for line in text.splitlines() if len(line.strip()) > LONG}


def our_files() -> list[Path]:
    return [
        path
        for folder in SCANNED
        for path in sorted((ROOT / folder).rglob("*"))
        if path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts
    ]


@pytest.mark.parametrize("module", ADK_PROMPT_MODULES)
def test_no_line_of_adks_prompts_is_copied(module):
    sentences = adk_sentences(module)
    assert len(sentences) > 20  # the templates were found: ADK's prompts are long
    copied = {}
    for path in our_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        found = [s for s in sentences if s in text]
        if found:
            copied[str(path.relative_to(ROOT))] = found[:3]
    assert not copied, f"ADK's prompt text copied into the repository: {copied}"
