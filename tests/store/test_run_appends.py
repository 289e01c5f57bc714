"""A run that grows: appenders of one run, each with a store of its own (a process's connection), append at the
same time and every row gets a position of its own; the run's counts and summary are those of all its rows, as
if it had been saved at once."""

from __future__ import annotations

import statistics
import threading

import pytest

from toolpath.store.run_appends import append_run_results, grown_summary
from toolpath.store.store import Store

RUN = {"run_id": "online-abc", "kind": "evalset", "dataset": "online s 2026-01-01", "agent": None,
       "metrics": {"s.evalset.json": {"m": {"threshold": 0.5}}}, "started_at": 1}  # fmt: skip


def test_appenders_of_one_run_take_positions_in_turn(store):
    appenders, batches, size = 4, 5, 3
    scores = {(a, b, i): ((a * 7 + b * 3 + i) % 10) / 10 for a in range(appenders) for b in range(batches)
              for i in range(size)}  # fmt: skip
    go = threading.Barrier(appenders)
    failures: list[BaseException] = []

    def append(a: int) -> None:
        own = Store(store.engine.url.render_as_string(hide_password=False))
        try:
            go.wait()
            for b in range(batches):
                rows = [
                    {"case_id": f"s/c{a}-{b}-{i}", "invocation_id": f"i{a}{b}{i}",
                     "status": "FAILED" if scores[a, b, i] < 0.5 else "PASSED",
                     "scores": {"m": scores[a, b, i], "n": None}, "row": {}}
                    for i in range(size)
                ]  # fmt: skip
                with own.redoable_write() as conn:
                    append_run_results(own, conn, RUN, rows)
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=append, args=(a,)) for a in range(appenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures
    run = store.get_eval_run("online-abc")
    assert run is not None
    total = appenders * batches * size
    assert [r["position"] for r in run["results"]] == list(range(total))
    assert len({r["case_id"] for r in run["results"]}) == total
    assert run["row_count"] == total == run["summary"]["row_count"]
    assert run["failed_count"] == sum(s < 0.5 for s in scores.values())
    kept = [r["scores"]["m"] for r in run["results"]]
    assert run["summary"]["m/mean"] == pytest.approx(statistics.mean(kept))
    assert run["summary"]["m/std"] == pytest.approx(statistics.stdev(kept))
    assert run["summary"]["n/mean"] is None  # a criterion never scored: listed, without a mean
    assert run["dataset"] == RUN["dataset"] and run["kind"] == "evalset"


def test_a_replaced_row_leaves_the_summary_of_the_rows_that_stay():
    scores = [0.2, 0.9, 0.4, 1.0, 0.0]
    summary = grown_summary({}, [{"m": s} for s in scores])
    summary = grown_summary(summary, [{"m": 0.9}], remove=True)
    summary = grown_summary(summary, [{"m": 0.5}])  # the row 0.9 was, merged
    kept = [0.2, 0.4, 1.0, 0.0, 0.5]
    assert summary["m/count"] == len(kept)
    assert summary["m/mean"] == pytest.approx(statistics.mean(kept))
    assert summary["m/std"] == pytest.approx(statistics.stdev(kept))
    assert grown_summary(grown_summary({}, [{"m": 0.3}]), [{"m": 0.3}], remove=True)["m/mean"] is None
