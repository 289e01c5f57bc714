"""Evaluators: :mod:`~toolpath.evaluators.metrics` (pure functions over model records, and the metric
mechanism) and :mod:`~toolpath.evaluators.judge` (metrics scored by an LLM judge through google-genai).
Which metric a name means, and running them over datasets, is :mod:`toolpath.evaluation`'s job."""
