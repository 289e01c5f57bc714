"""A flight-booking conversation for simulated-user tests: the agent, the scripted simulated user that talks to it
through a fake Gemini server, and the eval set with its ``conversation_scenario``."""

from __future__ import annotations

import json
from pathlib import Path

import toolpath
from tests.helpers.fake_gemini import Reply

PLAN = "You want a flight from Paris to Rome. Give the origin and the destination only when asked."
START = "I want to book a flight."


@toolpath.tool
def book_flight(origin: str, destination: str) -> dict:
    return {"booking": f"{origin}-{destination}", "status": "confirmed"}


class FlightAgent:
    """Asks for the origin, then the destination, then books; remembers each session's answers."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.sessions: dict[str, dict[str, str]] = {}
        self.fail_on = fail_on

    def __call__(self, prompt: str, session_id: str | None = None) -> str:
        if self.fail_on and self.fail_on in prompt:
            raise RuntimeError("booking backend down")
        known = self.sessions.setdefault(session_id or "", {})
        if "Paris" in prompt:
            known["origin"] = "Paris"
        if "Rome" in prompt:
            known["destination"] = "Rome"
        if "origin" not in known:
            return "Where do you fly from?"
        if "destination" not in known:
            return "Where to?"
        booked = book_flight(known["origin"], known["destination"])
        return f"Booked {booked['booking']}, {booked['status']}."


def last_agent_line(prompt: str) -> str:
    history = prompt.rsplit("# Conversation History", 1)[-1].strip()
    return history.split("\n\n")[-1] if history else ""


def flight_user(prompt: str, seen: int) -> Reply:
    """The simulated user: answers what the agent last asked; ends the conversation once booked."""
    last = last_agent_line(prompt)
    if last.endswith("Where do you fly from?"):
        return Reply("From Paris.")
    if last.endswith("Where to?"):
        return Reply("To Rome, please.")
    if "Booked" in last:
        return Reply("Great, thanks! </FINISHED>")
    return Reply("Hm?")


def write_scenario(folder: Path, simulator: dict | None = None, criteria: dict | None = None) -> Path:
    evalset = {
        "eval_set_id": "flights",
        "eval_cases": [
            {"eval_id": "book", "conversation_scenario": {"starting_prompt": START, "conversation_plan": PLAN}}
        ],
    }
    path = folder / "flights.evalset.json"
    path.write_text(json.dumps(evalset))
    config: dict = {"criteria": criteria or {"error_recovery": 1.0}}
    if simulator is not None:
        config["user_simulator_config"] = simulator
    (folder / "test_config.json").write_text(json.dumps(config))
    return path
