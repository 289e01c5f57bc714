"""Metrics: pure functions over model records, and the registry mechanism."""
