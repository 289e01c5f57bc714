"""The package's rooms and arrows: what may import what, no import cycles, light imports, small modules.

Data flows one way — adapter → tracer → span → collector → store → evaluation — and these tests keep the code
that way: an import against the flow, or a cycle, fails here before it reaches a user.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "toolpath"

# Modules every room may use: they import nothing of toolpath's but each other.
BASE = (
    "toolpath.config",
    "toolpath.hosts",
    "toolpath.errors",
    "toolpath.model",
    "toolpath.trajectory",
    "toolpath.redact",
    "toolpath.redact_catalogue",
    "toolpath.redact_text",
    "toolpath.values",
    "toolpath.jsontext",
    "toolpath.private_files",
)

# room -> the rooms (module prefixes) it may import, beside itself and BASE.
RULES: dict[str, tuple[str, ...]] = {
    "toolpath.tracer": (),
    "toolpath.adapters": ("toolpath.tracer",),
    "toolpath.store": (),
    "toolpath.collector": ("toolpath.tracer.semconv", "toolpath.store"),
    "toolpath.metrics": (),
    "toolpath.judges": ("toolpath.metrics",),
    "toolpath.datasets": (),
    "toolpath.evaluation": (
        "toolpath.adapters",
        "toolpath.tracer",
        "toolpath.store",
        "toolpath.metrics",
        "toolpath.judges",
        "toolpath.datasets",
        "toolpath.tracing",
    ),
    "toolpath.vertex": (
        "toolpath.evaluation",
        "toolpath.metrics",
        "toolpath.judges",
        "toolpath.datasets",
        "toolpath.store",
        "toolpath.tracing",
    ),
    "toolpath.mcp_server": (
        "toolpath.store",
        "toolpath.evaluation",
        "toolpath.datasets",
        "toolpath.metrics",
    ),
    "toolpath.ui": (
        "toolpath.store",
        "toolpath.evaluation",
        "toolpath.datasets",
        "toolpath.metrics",
        "toolpath.judges",
        "toolpath.tracer.semconv",
    ),
}
ANYTHING = ("toolpath.tracing", "toolpath.cli", "toolpath.demo", "toolpath.testing", "toolpath")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(path: Path, *, module_level_only: bool) -> Iterator[tuple[str, int]]:
    """The toolpath modules ``path`` imports (``from pkg import sub`` counts as importing ``pkg.sub``), with
    their line; ``if TYPE_CHECKING:`` blocks are left out (annotations are not imports at run time)."""
    source = path.read_text(encoding="utf-8")
    return imports_of_source(source, module_name(path), module_level_only, is_package=path.name == "__init__.py")


def imports_of_source(
    source: str, me: str, module_level_only: bool, *, is_package: bool = False
) -> Iterator[tuple[str, int]]:
    """:func:`imports` of the code ``source`` of module ``me``."""

    def walk(nodes: list[ast.stmt]) -> Iterator[tuple[str, int]]:
        for node in nodes:
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield alias.name, node.lineno
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = me.split(".") if is_package else me.split(".")[:-1]
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    yield (sub if sub in MODULES else base), node.lineno
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if not module_level_only:
                    yield from walk(node.body)
            else:
                yield from walk([c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)])

    tree = ast.parse(source)
    return ((name, line) for name, line in walk(tree.body) if name.split(".")[0] == "toolpath")


def room_of(module: str) -> str | None:
    for room in sorted(RULES, key=len, reverse=True):
        if module == room or module.startswith(room + "."):
            return room
    return None


def under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_every_import_follows_the_flow() -> None:
    """Every import, at module level or inside a function, goes where its room may go."""
    wrong = []
    for module, path in sorted(MODULES.items()):
        room = room_of(module)
        if room is None:
            assert module in BASE or any(under(module, a) for a in ANYTHING), f"{module} belongs to no room"
            continue
        allowed = (room, *BASE, *RULES[room])
        for target, line in imports(path, module_level_only=False):
            if not any(under(target, a) for a in allowed):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {room} imports {target}")
    base_imports = [
        f"{module} imports {target}"
        for module in BASE
        for target, _ in imports(MODULES[module], module_level_only=False)
        if target not in BASE
    ]
    assert not wrong and not base_imports, "\n".join(wrong + base_imports)


def test_only_the_cli_imports_the_ui() -> None:
    """The web app is a front end: nothing but the command line (and the app itself) imports it."""
    wrong = [
        f"{module} imports {target}"
        for module, path in sorted(MODULES.items())
        if not under(module, "toolpath.ui") and not under(module, "toolpath.cli")
        for target, _ in imports(path, module_level_only=False)
        if under(target, "toolpath.ui")
    ]
    assert not wrong, "\n".join(wrong)


def find_cycles(graph: dict[str, set[str]]) -> list[str]:
    """Every cycle a depth-first walk of ``graph`` (module -> modules it imports) closes, as ``a -> b -> a``."""
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*stack[stack.index(target) :], target]))
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def test_no_import_cycles() -> None:
    """No cycle among imports, those inside functions included (a lazy import is still an arrow: two modules
    that need each other are one design); a submodule importing a name from its own package counts."""
    graph = {
        m: {t for t, _ in imports(p, module_level_only=False) if t in MODULES and t != m} for m, p in MODULES.items()
    }
    cycles = find_cycles(graph)
    assert not cycles, "\n".join(cycles)


def test_a_cycle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    """The checker itself: a cycle closed only by an import inside a function is a cycle."""
    a = tmp_path / "a.py"
    a.write_text("import toolpath.model\n")
    b = tmp_path / "b.py"
    b.write_text("def later():\n    from toolpath.errors import ToolpathError\n")
    found_a = {t for t, _ in imports_of_source(a.read_text(), "toolpath.errors", module_level_only=False)}
    found_b = {t for t, _ in imports_of_source(b.read_text(), "toolpath.model", module_level_only=False)}
    graph = {"toolpath.errors": found_a, "toolpath.model": found_b}
    assert find_cycles(graph) == ["toolpath.errors -> toolpath.model -> toolpath.errors"]
    top_only = {t for t, _ in imports_of_source(b.read_text(), "toolpath.model", module_level_only=True)}
    assert find_cycles({"toolpath.errors": found_a, "toolpath.model": top_only}) == []


@pytest.mark.parametrize("module", ["toolpath", "toolpath.adapters.function", "toolpath.tracer.spans"])
def test_light_imports(module: str) -> None:
    """What ``@toolpath.tool`` needs loads neither SQLAlchemy nor the OpenTelemetry SDK (a fresh process)."""
    code = (
        f"import sys, {module}\n"
        "heavy = sorted(m for m in ('sqlalchemy', 'opentelemetry.sdk', 'google.genai', 'langchain_core') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"import {module} loads {out}"


def test_public_api_resolves_lazily() -> None:
    code = (
        "import sys, toolpath\n"
        "assert 'sqlalchemy' not in sys.modules\n"
        "names = [getattr(toolpath, n) for n in toolpath.__all__]\n"
        "print(toolpath.__version__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()


def test_no_module_over_500_lines() -> None:
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert not long, long


def test_the_rules_see_real_imports() -> None:
    """The checker itself: it finds a module-level and a function-level import where they are."""
    found = dict(imports(MODULES["toolpath.tracing"], module_level_only=False))
    assert "toolpath.collector.in_process" in found and "toolpath.evaluation.online" in found
    top = dict(imports(MODULES["toolpath.tracing"], module_level_only=True))
    assert "toolpath.evaluation.online" not in top


def test_no_two_modules_share_a_file_name() -> None:
    """A file name says which module it is: no two modules of the package share one (``__init__.py`` aside)."""
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(str(path.relative_to(PACKAGE.parent)))
    shared = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not shared, shared
