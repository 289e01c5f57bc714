"""Issue 48's ten debugging tasks in real headless Chromium, on a store built as production builds one: a few
hundred turns sent as OTLP/HTTP exports (finish order, traces split across requests) to a real ``toolpath
collect`` with online scoring on, and two eval runs where the newer regressed (tests/helpers/debugging_day.py).
Each task clicks through the UI as a user would (tests/helpers/debugging_tasks.py); the benchmark
``benchmarks/bench_debugging_day.py`` runs the same tasks on 100,000 turns."""

from __future__ import annotations

import pytest

from tests.helpers.debugging_day import Day, build
from tests.helpers.debugging_tasks import TASKS, Task
from tests.helpers.ui import Watched, browser, serve_ui
from toolpath.store.store import Store

TURNS = 300


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-debugging-day")
    built = build(folder, Day.of(TURNS))
    store = Store(built.store_url)
    with serve_ui(store, folder / "evalsets") as url, browser() as chromium:
        yield url, built, chromium
    store.close()


@pytest.fixture
def page(ui):
    context = ui[2].new_context(viewport={"width": 1280, "height": 900})  # one browser for the module
    watched = Watched(context.new_page())
    yield watched.page
    assert watched.errors == [] and watched.dialogs == []
    context.close()


def test_the_store_was_built_through_the_collector(ui):
    built = ui[1]
    day = built.day
    assert built.spans == sum(len(day.spans(n)) for n in range(day.turns))
    assert built.scores > 0  # scored online by the collector, as the traffic came


@pytest.mark.parametrize("task", TASKS, ids=[task.name for task in TASKS])
def test_a_debugging_task(ui, page, task: Task):
    url, built, _ = ui
    task.run(page, url, built.day)
