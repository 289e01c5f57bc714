"""HAProxy from Debian's package (``apt-get install -y haproxy``) run with the configuration docs/deploy.md shows:
the block is read from the page, its host names and ports replaced by loopback ones, checked (``haproxy -c``) and
run in the foreground."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

DEPLOY_DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"


def haproxy_binary() -> str:
    """The installed ``haproxy``; the test fails under CI (which installs it) and skips elsewhere."""
    found = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("HAProxy is not installed; .ci/run must install it (apt-get install -y haproxy)")
        pytest.skip("HAProxy not found (apt-get install -y haproxy)")
    return found


def documented_config() -> str:
    """The ``haproxy.cfg`` block of docs/deploy.md (the one fenced block whose first line is ``# haproxy.cfg``)."""
    blocks = re.findall(r"```text\n(# haproxy\.cfg.*?)```", DEPLOY_DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 1, "docs/deploy.md must show one haproxy.cfg block"
    return blocks[0]


def localized(config: str, replacements: Mapping[str, str]) -> str:
    """``config`` with each documented name (``toolpath-1:4318``, ``0.0.0.0:4318``, ``user toolpath``) replaced;
    every one must be there, so the page and the test cannot drift apart silently."""
    for documented, local in replacements.items():
        assert documented in config, f"docs/deploy.md's haproxy.cfg no longer has {documented!r}"
        config = config.replace(documented, local)
    return config


@contextlib.contextmanager
def running_haproxy(config: str, folder: Path, ports: list[int]) -> Iterator[subprocess.Popen]:
    """HAProxy with ``config`` (written to ``folder/haproxy.cfg``, checked first), until every one of ``ports``
    accepts connections; stopped after."""
    binary = haproxy_binary()
    path = folder / "haproxy.cfg"
    path.write_text(config)
    check = subprocess.run([binary, "-c", "-f", str(path)], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, f"haproxy -c refused the documented configuration:\n{check.stdout}{check.stderr}"
    with open(folder / "haproxy.log", "w") as log:  # the process keeps its own copy of the file
        process = subprocess.Popen([binary, "-db", "-f", str(path)], stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 20
        for port in ports:
            while True:
                assert process.poll() is None, (folder / "haproxy.log").read_text()
                with socket.socket() as sock:
                    if sock.connect_ex(("127.0.0.1", port)) == 0:
                        break
                assert time.monotonic() < deadline, f"HAProxy does not listen on {port}"
                time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        process.wait(10)
