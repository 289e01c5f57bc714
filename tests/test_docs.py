"""The README's set-up commands are what CI and users run; keep them honest."""

from __future__ import annotations

import re
import types
from pathlib import Path

import toolpath

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return [b.strip() for b in blocks[:2]]


def test_readme_opens_with_demo_and_test_commands():
    demo, tests = readme_commands()
    assert "toolpath demo" in demo
    assert "pytest" in tests


def test_the_demo_command_installs_what_the_quickstart_uses():
    """The first set-up command installs every extra the README's quickstart then needs: ``toolpath ui`` needs
    the ``ui`` extra, the demo's LangGraph agent the ``langgraph`` one."""
    demo, _ = readme_commands()
    extras = set(re.search(r"\.\[([a-z,]+)\]", demo).group(1).split(","))  # type: ignore[union-attr]
    quickstart = (ROOT / "README.md").read_text().split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    needed = {"langgraph"} | ({"ui"} if "toolpath ui" in quickstart else set())
    assert needed <= extras, f"the demo command misses the extras {sorted(needed - extras)}"
    index = (ROOT / "docs" / "index.md").read_text()
    assert demo in index  # the docs' home page gives the same command


def test_ci_runs_exactly_the_readme_test_command():
    _, tests = readme_commands()
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert tests in ci_lines


def test_exported_names():
    exported = {
        name
        for name in dir(toolpath)
        if not name.startswith("_") and not isinstance(getattr(toolpath, name), types.ModuleType)
    }
    assert set(toolpath.__all__) == exported


def documented_metrics() -> set[str]:
    """Metric names in docs/metrics.md's metric tables (tables whose first header cell is ``metric``): every
    backticked name in a row's first cell, without its parameters."""
    tables: list[list[str]] = []
    previous = ""
    for line in (ROOT / "docs" / "metrics.md").read_text().splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(re.split(r"(?<!\\)\|", line)[1].strip())
        previous = line
    names: set[str] = set()
    for header, _rule, *rows in tables:
        if header != "metric":
            continue
        for cell in rows:
            for span in re.findall(r"`([^`]+)`", cell):
                match = re.match(r"[a-z][a-z0-9_]*", span)
                assert match, f"not a metric name in docs/metrics.md: {span!r}"
                names.add(match.group())
    return names


def test_every_registered_metric_is_documented():
    missing = set(toolpath.metric_names()) - documented_metrics()
    assert not missing, f"registered but not in docs/metrics.md's tables: {sorted(missing)}"


def test_every_documented_metric_is_registered():
    unknown = documented_metrics() - set(toolpath.metric_names())
    assert not unknown, f"in docs/metrics.md's tables but not registered: {sorted(unknown)}"


def metadata_table() -> dict[str, list[str]]:
    """docs/metrics.md's table of what each metric reads, its range, direction and pass mark, by metric."""
    text = (ROOT / "docs" / "metrics.md").read_text().split("## Reads, range, direction, pass mark", 1)[1]
    rows = [line for line in text.split("\n## ", 1)[0].splitlines() if line.startswith("| `")]
    cells = [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]
    return {row[0].strip("`"): row[1:] for row in cells}


def test_metric_metadata_in_the_docs_is_the_registry_s():
    from toolpath.evaluation.catalog import metric_info

    documented = metadata_table()
    assert sorted(documented) == toolpath.metric_names()
    for name, (reads, value_range, better, mark) in documented.items():
        info = metric_info(name)
        assert [c.strip("` ") for c in reads.split(",")] == list(info.inputs), name
        assert (value_range, better, mark) == (info.range, info.direction, info.mark), name


def test_every_module_the_api_reference_documents_declares_what_it_exports():
    """docs/api.md and the code agree: each module it documents has ``__all__``, every member it lists is in it,
    and every name in ``__all__`` exists (what may move without notice is what no ``__all__`` names)."""
    import importlib
    import re

    api = (ROOT / "docs" / "api.md").read_text()
    blocks = re.findall(r"^::: ([\w.]+)(?:\n    options:\n      members: \[([^\]]*)\])?", api, re.M)
    assert len(blocks) >= 10
    wrong = []
    for name, members in blocks:
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        if exported is None:
            wrong.append(f"{name}: no __all__")
            continue
        wrong += [
            f"{name}: documents {m}, not in __all__"
            for m in re.split(r",\s*", members.strip())
            if m and m not in exported
        ]
        wrong += [f"{name}: __all__ names {n}, which does not exist" for n in exported if not hasattr(module, n)]
    assert not wrong, "\n".join(wrong)
