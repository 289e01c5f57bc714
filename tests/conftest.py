"""Shared fixtures: one global SDK provider with an in-memory exporter (the application's own processor,
which toolpath must leave alone), toolpath tracing into a real SQLite file, and a real PostgreSQL server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

import toolpath
from tests.helpers.pgserver import postgres_server
from toolpath.judges import process_budget as process_budget_module
from toolpath.judges.process_budget import ProcessBudget
from toolpath.store import schema
from toolpath.store.store import Store

APP_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(APP_EXPORTER))
trace.set_tracer_provider(_PROVIDER)


@pytest.fixture
def app_spans() -> Iterator[InMemorySpanExporter]:
    """What the application's own exporter received during the test."""
    APP_EXPORTER.clear()
    yield APP_EXPORTER
    APP_EXPORTER.clear()


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'toolpath.db'}"


@pytest.fixture
def tracing(store_url: str, app_spans: InMemorySpanExporter) -> Iterator[toolpath.tracing.Tracing]:
    """toolpath tracing into a fresh SQLite file; shut down after the test."""
    toolpath.shutdown()
    setup = toolpath.init(store=store_url)
    yield setup
    toolpath.shutdown()


@pytest.fixture(autouse=True)
def _no_leftover_tracing() -> Iterator[None]:
    yield
    toolpath.shutdown()


@pytest.fixture(autouse=True)
def _fresh_judge_budget(monkeypatch) -> None:
    """Each test meets the process's judge budget as a new process does: a command run in process by an earlier
    test (its --judge-* options, its minute of calls) leaves nothing behind for the judges of the next."""
    monkeypatch.setattr(process_budget_module, "_PROCESS", ProcessBudget())


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server on loopback for this test session (``$TOOLPATH_TEST_POSTGRES_URL`` if set)."""
    if url := os.environ.get("TOOLPATH_TEST_POSTGRES_URL"):
        yield url
        return
    with postgres_server().running() as url:
        yield url


@pytest.fixture
def fresh_postgres(postgres_url) -> Iterator[str]:
    """An empty database of its own on the test server."""
    name = f"mig_{uuid.uuid4().hex[:12]}"
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    yield make_url(postgres_url).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path) -> Iterator[Store]:
    """An empty store on a real SQLite file, then on the real PostgreSQL server."""
    if request.param == "sqlite":
        opened = Store(f"sqlite:///{tmp_path / 'store.db'}")
    else:
        opened = Store(request.getfixturevalue("postgres_url"))
        with opened.engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {', '.join([*schema.metadata.tables, 'turn_text'])}"))
    yield opened
    opened.close()
