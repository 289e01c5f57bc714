"""Which criteria ADK's own judge scores when google-adk is installed: names only, found without importing
google-adk, google-genai or pydantic (``toolpath metrics`` lists them; :mod:`toolpath.judges.adk_bridge` runs them).
"""

from __future__ import annotations

import importlib.util

ADK_PROMPTED = (
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "hallucinations_v1",
)
"""The criteria ADK judges with a Gemini prompt of its own: under these names, ADK's judge when it is installed."""

ADK_CONVERSATION = ("rubric_based_multi_turn_trajectory_quality_v1", "per_turn_user_simulator_quality_v1")
"""ADK's Gemini-judged criteria over a whole conversation (a case-level row's ``invocations``, and its
``conversation_scenario``): ADK's judge too when it is installed."""


def adk_installed() -> bool:
    """Whether google-adk's evaluation package can be imported (found, not imported: ``import toolpath`` stays
    light)."""
    try:
        return importlib.util.find_spec("google.adk") is not None
    except (ImportError, ValueError):
        return False


def judge_of(name: str, installed: bool | None = None) -> str:
    """Which judge scores criterion ``name``: ``adk`` (ADK's own prompts and reading, from the installed
    google-adk) or ``toolpath`` (toolpath's prompts); ``installed``: whether google-adk is (default: looked up)."""
    if name not in (*ADK_PROMPTED, *ADK_CONVERSATION):
        return "toolpath"
    return "adk" if (adk_installed() if installed is None else installed) else "toolpath"
