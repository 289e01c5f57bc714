"""Fixtures of the adapter tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.collector import Collector


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    """A collector process for this test, stopped after it."""
    started = Collector(tmp_path).start()
    yield started
    started.stop()
