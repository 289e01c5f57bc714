"""The test suite's own layout: test modules import shared code from ``tests.helpers``, never from one another,
``conftest.py`` files hold fixtures only, and every test folder is a package."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "fixtures" not in p.relative_to(TESTS).parts)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """Every module ``source`` (the code of ``module``) imports, relative imports resolved; each name imported
    from a module is listed too (``from tests.cli import test_eval`` imports a module by name)."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def imports_of_test_modules(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """The imports of test modules and of conftest files in ``source``."""
    return [
        (line, name)
        for line, name in imported_modules(source, module, is_package)
        if name.startswith("tests.") and (name.rpartition(".")[2].startswith("test_") or name.endswith(".conftest"))
    ]


def test_no_module_imports_a_test_module():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: imports {name}"
        for path in python_files()
        for line, name in imports_of_test_modules(
            path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py"
        )
    ]
    assert offenders == [], "test modules import shared code from tests.helpers:\n" + "\n".join(offenders)


def test_the_check_sees_every_form_of_import():
    source = "\n".join(
        [
            "from tests.cli.test_eval import x",
            "import tests.cli.test_eval",
            "from tests.cli import test_eval",
            "from .test_eval import x",
            "from . import test_eval",
            "from ..collector.test_receiver import Collector",
            "def f():\n    from tests.store.test_store import invocation",
            "from tests.helpers.cli import run_cli",
            "from tests.helpers import SPANS",
            "import toolpath.testing",
            "from tests.conftest import postgres_server",
        ]
    )
    found = imports_of_test_modules(source, "tests.cli.test_sample")
    assert sorted({line for line, _ in found}) == [1, 2, 3, 4, 5, 6, 8, 12]
    assert {name for _, name in found} == {
        "tests.cli.test_eval",
        "tests.collector.test_receiver",
        "tests.store.test_store",
        "tests.conftest",
    }


def test_conftest_files_hold_fixtures_and_hooks_only():
    for conftest in TESTS.rglob("conftest.py"):
        where = conftest.relative_to(ROOT)
        for node in ast.parse(conftest.read_text(encoding="utf-8")).body:
            assert not isinstance(node, ast.ClassDef), f"{where}: class {node.name} belongs in tests/helpers"
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("pytest_"):
                decorators = [ast.unparse(d) for d in node.decorator_list]
                assert any(d.startswith(("pytest.fixture", "fixture")) for d in decorators), (
                    f"{where}: {node.name} is not a fixture; shared helpers belong in tests/helpers"
                )


def test_every_test_folder_is_a_package():
    """Test modules are imported as ``tests.<folder>.<module>``, so two folders may hold modules of one name."""
    folders = {p.parent for p in TESTS.rglob("test_*.py")}
    missing = sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").exists())
    assert missing == []
