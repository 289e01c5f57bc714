"""The simulated user's prompt, as the installed google-adk renders it.

The text is ADK's, never toolpath's: its default instructions for the LLM-backed user simulator, or the config's
``custom_instructions`` (a Jinja template, rendered in jinja2's sandbox), filled in with the stop signal, the
conversation plan and the conversation so far by ADK's own ``get_llm_backed_user_simulator_prompt``, imported at
run time. Nothing of ADK's text is kept in toolpath, so a new ADK release changes the prompt with it.

google-adk is the optional ``adk`` extra: it is imported here, inside functions, only when a scenario is checked or
played. Without it a ``conversation_scenario`` case is a :class:`ConfigError` before anything runs
(:func:`require_simulator_prompt`, called by the scenario checks).
"""

from __future__ import annotations

from collections.abc import Callable

from toolpath.errors import ConfigError

ADK_EXTRA = "pip install 'toolpath[adk]'"


def _adk_renderer() -> Callable[..., str]:
    try:
        import jinja2.sandbox  # noqa: F401 - ADK renders with it, and imports it only when it renders
        from google.adk.evaluation.simulation.llm_backed_user_simulator_prompts import (
            get_llm_backed_user_simulator_prompt,
        )
    except ImportError as exc:
        raise ConfigError(
            "a conversation_scenario's simulated user is prompted with google-adk's user simulator instructions, "
            f"read from the installed google-adk, which cannot be imported ({exc}): {ADK_EXTRA}"
        ) from None
    return get_llm_backed_user_simulator_prompt


def require_simulator_prompt() -> None:
    """A :class:`ConfigError` naming the ``adk`` extra when google-adk (or jinja2) cannot give the prompt."""
    _adk_renderer()


def render_instructions(
    conversation_plan: str, conversation_history: str, stop_signal: str, custom_instructions: str | None = None
) -> str:
    """The simulator's prompt: ADK's default instructions, or ``custom_instructions``, filled in by ADK."""
    render = _adk_renderer()
    return render(
        conversation_plan=conversation_plan,
        conversation_history=conversation_history,
        stop_signal=stop_signal,
        custom_instructions=custom_instructions,
    )
