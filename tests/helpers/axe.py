"""axe-core (the axe-playwright-python package's copy) over a page open in headless Chromium: its findings of a
given impact or worse, each as ``rule impact: the elements it names``."""

from __future__ import annotations

import os
from typing import Any

import pytest

IMPACTS = ("minor", "moderate", "serious", "critical")


def axe_findings(page: Any, worst_from: str = "moderate") -> list[str]:
    """The findings of axe on ``page`` as it is now, of impact ``worst_from`` or worse."""
    try:
        from axe_playwright_python import sync_playwright as axe
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("axe-playwright-python is not installed; it is in the dev extra (pip install '.[dev]')")
        pytest.skip("axe-playwright-python is not installed (pip install '.[dev]')")
    floor = IMPACTS.index(worst_from)
    results = axe.Axe().run(page)
    return [
        f"{v['id']} {v['impact']}: {', '.join(str(n['target']) for n in v['nodes'][:5])}"
        for v in results.response["violations"]
        if IMPACTS.index(v["impact"] or "minor") >= floor
    ]
