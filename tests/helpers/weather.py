"""The weather agents several tests trace and judge: one traced tool and agents around it."""

from __future__ import annotations

import toolpath
from tests.helpers.adk_records import HELLO


@toolpath.tool
def get_weather(city: str) -> dict:
    return {"city": city, "sky": "sunny", "temp": 20}


def good_agent(prompt: str) -> str:
    """Answers the weather question of the ADK weather fixtures as they expect (Paris), and greets otherwise."""
    if "weather" in prompt:
        w = get_weather("Paris")
        return f"The weather in Paris is {w['sky']}, {w['temp']}C."
    return HELLO


@toolpath.agent(name="bot")
def bot(prompt: str) -> str:
    """A traced agent: looks up Paris when the prompt names it, Oslo otherwise."""
    get_weather("Paris" if "Paris" in prompt else "Oslo")
    return "Sunny in Paris."


# Source of a `weather_agent.py` for `toolpath eval --agent weather_agent:good` (Paris, as the ADK weather fixtures
# expect) or `weather_agent:wrong` (London), written into a test's working folder.
WEATHER_AGENT_MODULE = """
import toolpath

@toolpath.tool
def get_weather(city: str) -> dict:
    return {"city": city, "sky": "sunny", "temp": 20}

def good(prompt):
    if "weather" in prompt:
        w = get_weather("Paris")
        return f"The weather in Paris is {w['sky']}, {w['temp']}C."
    return "Hello! I can tell you the weather."

def wrong(prompt):
    if "weather" in prompt:
        get_weather("London")
        return "The weather in London is sunny, 20C."
    return "Hello! I can tell you the weather."
"""
