"""Evaluations the UI runs in the background: one thread per run, its progress readable while it runs."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from toolpath.errors import ToolpathError
from toolpath.evaluation.agent_runs import record_runs_in
from toolpath.evaluation.evalsets.evaluator import CaseResult, evaluate_eval_sets
from toolpath.evaluation.evalsets.files import EvalConfig, EvalSet
from toolpath.model import EvalStatus
from toolpath.store.store import Store

logger = logging.getLogger("toolpath.ui")


class JobState(StrEnum):
    """Where an evaluation started from the UI is (the job page polls it, and its script reads the text)."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    """The run itself could not finish (``Job.error`` says why)."""


@dataclass
class Job:
    job_id: str
    eval_set: str
    agent: str
    total: int
    done: int = 0
    passed: int = 0
    failed: int = 0
    state: JobState = JobState.RUNNING
    run_id: str | None = None
    error: str | None = None
    crashes: list[str] = field(default_factory=list)
    """``case: error`` of each case whose agent raised (the case failed unscored)."""
    started: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "eval_set": self.eval_set,
            "agent": self.agent,
            "total": self.total,
            "done": self.done,
            "passed": self.passed,
            "failed": self.failed,
            "state": self.state,
            "run_id": self.run_id,
            "error": self.error,
            "crashes": list(self.crashes),
        }


class Jobs:
    """The evaluation runs started from the UI, by id."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def start(self, name: str, eval_set: EvalSet, target: Any, agent: str, config: EvalConfig) -> Job:
        """Run ``eval_set`` against ``target`` (already loaded and checked) with ``config``'s criteria."""
        job = Job(uuid.uuid4().hex[:12], name, agent, total=len(eval_set.cases))
        with self._lock:
            self._jobs[job.job_id] = job

        def on_case(case: CaseResult) -> None:
            with self._lock:
                job.done += 1
                job.passed += case.status == EvalStatus.PASSED
                job.failed += case.status == EvalStatus.FAILED
                if case.error is not None:
                    job.crashes.append(f"{case.eval_id}: {case.error}")

        def run() -> None:
            # Whatever happens, the job ends as done or failed: a page polling it never waits for ever.
            state = JobState.FAILED
            run_id: str | None = None
            error: str | None = "the evaluation stopped without a result"
            try:
                record_runs_in(self.store)  # each case's turns stored, so its row links to its session and spans
                result = evaluate_eval_sets([eval_set], target, criteria=config, store=self.store, on_case=on_case)
                state, run_id, error = JobState.DONE, result.run_id, None
            except ToolpathError as exc:
                error = str(exc)
            except BaseException as exc:  # SystemExit from an agent's code too: it would end this thread silently
                logger.error("evaluation %s failed", job.job_id, exc_info=True)
                error = f"{type(exc).__name__}: {exc}"
            finally:
                with self._lock:
                    job.state, job.run_id, job.error = state, run_id, error

        threading.Thread(target=run, name=f"toolpath-ui-eval-{job.job_id}", daemon=True).start()
        return job
