"""What several test modules share: process and server helpers, span builders, fixture paths. Test modules
import from here and never from one another; ``conftest.py`` files hold fixtures only.

- :mod:`tests.helpers.cli`: the ``toolpath`` command, in this process or as a real process
- :mod:`tests.helpers.collector`: ``toolpath collect`` as a real process, and the OTLP/HTTP requests it takes
- :mod:`tests.helpers.pgserver`: a throw-away PostgreSQL server from the installed binaries
- :mod:`tests.helpers.fake_gemini`: a fake Gemini ``generateContent`` endpoint for the real google-genai client
- :mod:`tests.helpers.builders`: OTLP bodies, invocations and span lookups built the same way everywhere
- :mod:`tests.helpers.chromium`: load a page in headless Chromium
- :mod:`tests.helpers.adk_records`: ADK eval results built with ADK's classes and saved by ADK's own manager
"""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SPANS = FIXTURES / "spans"
"""OTLP exports of real peer instrumentations, each with the invocations it must rebuild to."""
ADK_FIXTURES = FIXTURES / "adk"
"""ADK eval sets: ADK's own files."""
