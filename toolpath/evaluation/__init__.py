"""Evaluation: the metric catalog, running agents, the runner, eval sets, replay and online scoring."""
