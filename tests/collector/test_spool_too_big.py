"""``toolpath collect --spool``: an export larger than the spool's bound is written to the store before it is
answered, so steady smaller exports never starve it, and it is answered only once committed."""

from __future__ import annotations

import sqlite3
import threading
import time

from tests.helpers.builders import otlp_json
from tests.helpers.collector import TOKEN, Collector, hold_write_lock, http_get, release_write_lock
from toolpath.collector import otlp
from toolpath.collector.ingestor import Ingestor
from toolpath.redact import Redactor
from toolpath.store.spool import Spool
from toolpath.store.store import Store

BIG_TRACE = "be" * 16
BIG = otlp_json(BIG_TRACE, 40, big="y" * 2000)
"""41 spans: one invocation of 40 tool calls."""


def _small(n: int) -> bytes:
    """2 spans: one invocation of one tool call, in a trace of its own."""
    return otlp_json(f"{n + 1:032x}", 1)  # never the all-zero trace id, which no span may have


def _spooled_bytes(tmp_path, body: bytes) -> int:
    probe = Spool(tmp_path / f"probe-{len(body)}")
    Ingestor(Store("sqlite://"), spool=probe, redactor=Redactor.build()).store_records(
        otlp.decode(body, "application/json")
    )
    size = probe.pending_bytes
    probe.close()
    return size


def _spool_spans(collector: Collector) -> float:
    for line in http_get(f"{collector.url}/metrics", TOKEN)[1].decode().splitlines():
        if line.startswith("toolpath_spool_spans "):
            return float(line.split()[1])
    raise AssertionError("no toolpath_spool_spans on /metrics")


def _wait_for(predicate, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


class _Posters:
    """Exporters sending small exports one after the other, each resent after a 503 until it is taken."""

    def __init__(self, collector: Collector, count: int) -> None:
        self.collector = collector
        self.stop = threading.Event()
        self.taken: list[int] = []
        self.refusals: list[tuple[bytes, dict[str, str]]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(k,)) for k in range(count)]

    def __enter__(self) -> _Posters:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join()

    def _run(self, k: int) -> None:
        n = k * 1_000_000
        while not self.stop.is_set():
            status, body, headers = self.collector.post(_small(n), "application/json")
            with self._lock:
                if status == 200:
                    self.taken.append(n)
                    n += 1
                elif status == 503:
                    self.refusals.append((body, headers))
                    time.sleep(0.02)  # the exporter's back-off
                else:
                    self.errors.append(f"{status} {body[:200]!r}")
                    return


def test_an_export_over_the_bound_is_stored_before_its_answer_while_smaller_ones_keep_coming(tmp_path):
    small, big = _spooled_bytes(tmp_path, _small(0)), _spooled_bytes(tmp_path, BIG)
    bound = 6 * small
    assert big > 3 * bound  # it would never fit, even in an empty spool
    collector = Collector(tmp_path, None, "--workers", "1", "--spool", str(tmp_path / "spool"),
                          "--spool-max-bytes", str(bound)).start()  # fmt: skip
    holder = hold_write_lock(collector.db)  # the drain cannot write
    answers: list[tuple[int, float]] = []
    store = collector.store()
    try:
        with _Posters(collector, 3) as posters:
            _wait_for(lambda: _spool_spans(collector) >= 2 and len(posters.refusals) > 0)  # full, refusing
            post = threading.Thread(target=lambda: answers.append((collector.post(BIG, "application/json")[0],
                                                                   time.monotonic())))  # fmt: skip
            post.start()
            time.sleep(1.5)
            assert answers == []  # neither refused nor answered: it waits for the store, not for room
            released = time.monotonic()
            release_write_lock(holder)
            post.join(timeout=60)
            assert [status for status, _ in answers] == [200] and answers[0][1] >= released
            stored = store.spans_of_trace(BIG_TRACE)  # answered: committed, whatever the spool holds
            assert len(stored) == 41
            # the store free, smaller exports still coming: another big one is taken at once, never refused
            status = collector.post(otlp_json("bf" * 16, 40, big="z" * 2000), "application/json")[0]
            assert status == 200 and len(store.spans_of_trace("bf" * 16)) == 41
            metrics = http_get(f"{collector.url}/metrics", TOKEN)[1].decode()
            assert 'toolpath_exports_unspooled_total{reason="too_big"} 2.0' in metrics  # counted, each once
            assert 'toolpath_exports_unspooled_total{reason="unspoolable_value"} 0.0' in metrics
            time.sleep(0.5)
        assert posters.errors == []
        for body, headers in posters.refusals:
            assert b"the spool holds" in body and "Retry-After" in headers
        _wait_for(lambda: _spool_spans(collector) == 0)
    finally:
        release_write_lock(holder)
        collector.stop()
    taken = posters.taken
    assert len(taken) > 6  # some were spooled while the big one waited, more after
    with sqlite3.connect(collector.db) as conn:  # every answered span once, nothing else
        assert conn.execute("SELECT COUNT(*), COUNT(DISTINCT trace_id || span_id) FROM spans").fetchone() == (
            2 * len(taken) + 82,
            2 * len(taken) + 82,
        )
        traces = {row[0] for row in conn.execute("SELECT DISTINCT trace_id FROM spans")}
    assert traces == {f"{n + 1:032x}" for n in taken} | {BIG_TRACE, "bf" * 16}
    assert store.counts()["invocations"] == len(taken) + 2
    said = " ".join(collector.process.communicate()[1].split())
    assert said.count("too big to spool") == 1 and "written to the store before it is answered" in said  # once
