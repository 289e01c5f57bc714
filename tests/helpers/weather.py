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
