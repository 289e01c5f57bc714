"""The collector's turns at its store: an export waiting goes before a scorer, and a scorer kept waiting behind
exports for ``yield_seconds`` takes the next turn anyway."""

from __future__ import annotations

import threading

from toolpath.collector.turns import Turns


def _waiting_exports(turns: Turns) -> int:
    with turns._ready:
        return turns._exports_waiting


def _wait_until(predicate, event: threading.Event) -> None:
    while not predicate():
        event.wait(0.001)


def test_a_waiting_export_goes_before_a_scorer() -> None:
    turns = Turns(1, yield_seconds=3600)  # a scorer never takes a turn an export waits for
    order: list[str] = []
    turns.acquire()  # an export holds the only turn
    pause = threading.Event()

    def export() -> None:
        with turns:
            order.append("export")

    def score() -> None:
        with turns.yielding():
            order.append("score")

    scorer = threading.Thread(target=score)
    scorer.start()
    exporter = threading.Thread(target=export)
    exporter.start()
    _wait_until(lambda: _waiting_exports(turns) == 1, pause)
    turns.release()
    exporter.join(5)
    scorer.join(5)
    assert order == ["export", "score"]
    assert turns.yielded == 1


def test_a_scorer_takes_a_free_turn_when_no_export_waits() -> None:
    turns = Turns(1, yield_seconds=3600)
    with turns.yielding():
        assert not turns.acquire(blocking=False)  # the scorer holds it
    assert turns.yielded == 0
    assert turns.acquire(blocking=False)


def test_a_scorer_behind_a_stream_of_exports_still_gets_a_turn() -> None:
    turns = Turns(1, yield_seconds=0.05)
    stop = threading.Event()
    exports = 0

    def stream() -> None:  # two exporters that always have the next export waiting
        nonlocal exports
        while not stop.is_set():
            with turns:
                exports += 1
                stop.wait(0.001)

    streams = [threading.Thread(target=stream) for _ in range(2)]
    for thread in streams:
        thread.start()
    scored = threading.Event()

    def score() -> None:
        with turns.yielding():
            scored.set()

    scorer = threading.Thread(target=score)
    scorer.start()
    assert scored.wait(30), "the scorer never got a turn"
    stop.set()
    for thread in [*streams, scorer]:
        thread.join(5)
    assert exports > 0


def test_an_export_that_times_out_leaves_no_waiter_behind() -> None:
    turns = Turns(1, quiet_seconds=0.0)
    turns.acquire()
    assert not turns.acquire(timeout=0.01)
    assert _waiting_exports(turns) == 0
    turns.release()
    with turns.yielding():  # no export waits: taken at once
        pass
    assert turns.yielded == 0


def _scoring(turns: Turns) -> tuple[threading.Event, threading.Thread]:
    """A scorer asking for a turn on a thread of its own; the event is set once it has one."""
    taken = threading.Event()

    def score() -> None:
        with turns.yielding():
            taken.set()

    scorer = threading.Thread(target=score, daemon=True)
    scorer.start()
    return taken, scorer


def test_a_scorer_waits_for_a_quiet_moment_after_an_export() -> None:
    turns = Turns(2, yield_seconds=3600, quiet_seconds=3600)
    with turns:
        pass  # an export just ended: the next of its stream is on its way
    taken, scorer = _scoring(turns)
    assert not taken.wait(0.3)  # no quiet moment yet, though both turns are free
    turns.quiet_seconds = 0.0
    with turns:  # the next export ends: its end wakes the scorer, and now the moment counts as quiet
        pass
    assert taken.wait(30)
    scorer.join(5)


def test_a_scorer_leaves_a_second_turn_to_exports_while_one_export_runs() -> None:
    turns = Turns(2, yield_seconds=3600, quiet_seconds=0.0)
    turns.acquire()  # an export holds one of two turns
    taken, scorer = _scoring(turns)
    assert not taken.wait(0.3)
    turns.release()
    assert taken.wait(30)
    scorer.join(5)
