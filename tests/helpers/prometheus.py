"""A throw-away Prometheus (the installed binary, a config and a data folder in a temporary folder, on 127.0.0.1
and a free port, scraping every second), its HTTP query API, and dashboard queries made the way Grafana makes
them."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.collector import free_port

SCRAPE_SECONDS = 1


def prometheus_binary() -> str:
    """The installed ``prometheus``; the test fails under CI (which installs it) and skips elsewhere."""
    binary = shutil.which("prometheus")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("prometheus is not installed; .ci/run must install it (apt-get install -y prometheus)")
        pytest.skip("prometheus not found (apt-get install -y prometheus)")
    return binary


@contextlib.contextmanager
def running_prometheus(binary: str, target: str, token: str | None = None) -> Iterator[str]:
    """Prometheus scraping ``target`` (``host:port``, ``/metrics``) every second; yields its URL."""
    workdir = Path(tempfile.mkdtemp(prefix="toolpath-prom-"))
    job: dict[str, Any] = {"job_name": "toolpath", "static_configs": [{"targets": [target]}]}
    if token:
        job["authorization"] = {"type": "Bearer", "credentials": token}
    config = {
        "global": {"scrape_interval": f"{SCRAPE_SECONDS}s", "evaluation_interval": f"{SCRAPE_SECONDS}s"},
        "scrape_configs": [job],
    }
    (workdir / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    port = free_port()
    process = subprocess.Popen(
        [binary, f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while not _ready(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prometheus did not start: {process.stderr.read() if process.stderr else ''}")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as reply:
            return reply.status == 200
    except OSError:
        return False


def api(url: str, path: str, **params: str) -> dict[str, Any]:
    """A GET on the HTTP API: its JSON, errors included (``status``: ``success`` or ``error``)."""
    query = urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(f"{url}/api/v1/{path}?{query}", timeout=30) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return json.loads(error.read())


def scraped_up(url: str) -> bool:
    targets = api(url, "targets")["data"]["activeTargets"]
    return bool(targets) and all(t["health"] == "up" for t in targets)


# --- dashboards, as Grafana runs them ------------------------------------------------------------------------


def dashboard_queries(dashboard: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(panel title, expression)`` for every query target of every panel (rows' panels included)."""
    for panel in dashboard.get("panels", []):
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]
        for inner in panel.get("panels", []):
            for target in inner.get("targets", []):
                yield inner["title"], target["expr"]


def query_variables(dashboard: Mapping[str, Any]) -> dict[str, str]:
    """Name -> ``label_values(series, label)`` query of each query variable."""
    return {
        v["name"]: v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        for v in dashboard["templating"]["list"]
        if v["type"] == "query"
    }


def label_values(url: str, query: str) -> list[str]:
    """What Grafana lists for a ``label_values(series, label)`` variable."""
    found = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", query.strip())
    assert found, f"not a label_values query: {query}"
    series, label = found.groups()
    reply = api(url, f"label/{label}/values", **{"match[]": series})
    assert reply["status"] == "success", reply
    return list(reply["data"])


def grafana_expr(expr: str, values: Mapping[str, str], *, interval_seconds: int, range_seconds: int) -> str:
    """``expr`` with Grafana's variables replaced: ``$__rate_interval`` (max(4 × scrape interval, interval +
    scrape interval)), ``$__interval``, ``$__range``, and the dashboard's own (``$name`` / ``${name}``, a
    multi-value one as a regex alternation, "All" as its ``allValue``). An unknown variable fails."""
    rate_interval = max(4 * SCRAPE_SECONDS, interval_seconds + SCRAPE_SECONDS)
    builtins = {
        "__rate_interval": f"{rate_interval}s",
        "__interval": f"{interval_seconds}s",
        "__range": f"{range_seconds}s",
        "__range_s": str(range_seconds),
    }

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in builtins:
            return builtins[name]
        assert name in values, f"variable ${name} is not defined by the dashboard: {expr}"
        return values[name]

    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", value, expr)


def regex_value(chosen: list[str]) -> str:
    """A multi-value variable's selection as Grafana writes it into a Prometheus regex."""
    escaped = [re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\\\1", v) for v in chosen]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"
