"""Online evaluation: score live invocations as they are stored, never in the agent's way.

    toolpath.init(online="online.toml")              # in the agent's process
    toolpath collect --online online.toml             # in the collector service (any number of them)

The config declares evaluators (:mod:`toolpath.evaluation.online.evaluator_specs`): ``[[evaluator]]`` tables,
each with a name, a version, its metrics, filters and limits, or the flat form below, one evaluator. The store
enqueues a job for each invocation and evaluator whose filters and sample take it, in the transaction that
writes it (:mod:`toolpath.store.job_queue`); limits are kept in the store (:mod:`toolpath.store.online_usage`).
Workers of their own claim jobs, build a row per invocation (its prompt, response, trajectory, latency and
failure, plus the golden dataset's reference when the prompt is found there), score it with its evaluator's
metrics (computation and judge), store the scores with the job, and send each over OTLP
(:mod:`toolpath.evaluation.online.result_export`). The agent's thread does none of this.

``online.toml``::

    metrics = ["trajectory_exact_match", "tool_error_rate", "fluency"]
    sample_rate = 0.25                 # share of invocations scored (by a hash of their id and the evaluator)
    agent_names = ["support_bot"]      # only these agents (default: all)
    failures_only = false
    attributes = { "service.name" = "support" }   # invocation attributes that must match
    reference_dataset = "golden.jsonl" # references matched by prompt; omit for reference-free metrics;
                                       # an ADK *.evalset.json adds its criteria and thresholds
    match = "normalized"               # or "exact"
    thresholds = { fluency = 4 }       # pass marks (default: each metric's own, see `toolpath metrics`)
    workers = 2
    max_backlog = 10000                # waiting jobs past this are shed…
    shed = "oldest"                    # …oldest first (or "newest"), and counted
    otlp_endpoint = "http://127.0.0.1:4318"   # default: OTEL_EXPORTER_OTLP_* if set, else no export
    [judge]
    model = "gemini-2.5-flash"
    concurrency = 8
"""

from toolpath.evaluation.online.settings import OnlineConfig
from toolpath.evaluation.online.workers import OnlineEvaluator

__all__ = ["OnlineConfig", "OnlineEvaluator"]
