"""A small smart-home agent for ``toolpath demo``: seven plain-function tools and a rule-based planner.

The planner stands in for an LLM and, like one, gets some requests wrong in ways users recognise: it
ignores Fahrenheit, knows only the front door, checks the weather twice, skips reading a thermostat before
nudging it "a bit", mixes up the hallway lights, and switches a room off in its own order. No network.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import toolpath

_INITIAL_HOME: dict[str, dict[str, Any]] = {
    "thermostat-living_room": {"room": "living_room", "kind": "thermostat", "temperature": 20.0},
    "thermostat-bedroom": {"room": "bedroom", "kind": "thermostat", "temperature": 18.5},
    "thermostat-office": {"room": "office", "kind": "thermostat", "temperature": 21.0},
    "light-hallway-1": {"room": "hallway", "kind": "light", "power": "on", "brightness": 100},
    "light-hallway-2": {"room": "hallway", "kind": "light", "power": "on", "brightness": 80},
    "light-kitchen-1": {"room": "kitchen", "kind": "light", "power": "on", "brightness": 100},
    "light-kitchen-2": {"room": "kitchen", "kind": "light", "power": "on", "brightness": 60},
    "light-bedroom-1": {"room": "bedroom", "kind": "light", "power": "off", "brightness": 40},
    "door-front": {"room": "entrance", "kind": "door", "locked": False},
    "door-back": {"room": "garden", "kind": "door", "locked": False},
}
_WEATHER = {"paris": ("clear", 14.0), "oslo": ("snow", -3.0), "lisbon": ("sunny", 22.0), "tokyo": ("rain", 11.0)}
_ROOMS = ("living room", "bedroom", "office", "hallway", "kitchen", "garage", "garden", "entrance")

home: dict[str, dict[str, Any]] = copy.deepcopy(_INITIAL_HOME)


class DeviceError(ValueError):
    """A request the home cannot carry out."""


@toolpath.tool
def list_devices(room: str) -> list[str]:
    """List the ids of the devices in a room."""
    return sorted(device_id for device_id, device in home.items() if device["room"] == room)


@toolpath.tool
def get_device_info(device_id: str) -> dict[str, Any]:
    """Read a device's current state."""
    if device_id not in home:
        raise DeviceError(f"no device {device_id!r}")
    return {"device_id": device_id, **home[device_id]}


@toolpath.tool
def set_device_info(device_id: str, updates: dict[str, Any]) -> dict[str, Any]:
    """Change a device's settings (power, brightness, colour...)."""
    if device_id not in home:
        raise DeviceError(f"no device {device_id!r}")
    home[device_id].update(updates)
    return {"device_id": device_id, **home[device_id]}


@toolpath.tool
def set_temperature(location: str, temperature: float) -> dict[str, Any]:
    """Set the thermostat of a room, in degrees Celsius."""
    device_id = f"thermostat-{location}"
    if device_id not in home:
        raise DeviceError(f"{location} has no thermostat")
    if not 5 <= temperature <= 30:
        raise DeviceError(f"{temperature} °C is outside the safe range 5-30 °C")
    home[device_id]["temperature"] = temperature
    return {"location": location, "temperature": temperature}


@toolpath.tool
def lock_door(door_id: str) -> dict[str, Any]:
    """Lock a door."""
    if door_id not in home:
        raise DeviceError(f"no door {door_id!r}")
    home[door_id]["locked"] = True
    return {"door_id": door_id, "locked": True}


@toolpath.tool
def get_weather(city: str) -> dict[str, Any]:
    """Current weather in a city."""
    sky, temperature = _WEATHER.get(city.lower(), ("cloudy", 12.0))
    return {"city": city, "sky": sky, "temperature": temperature}


@toolpath.tool(name="send_notification", description="Send a message to the household's phones.")
def notify(message: str) -> dict[str, Any]:
    return {"sent": True, "message": message}


def _room(text: str) -> str | None:
    for room in _ROOMS:
        if room in text:
            return room.replace(" ", "_")
    return None


def _number(text: str) -> float:
    match = re.search(r"(-?\d+(?:\.\d+)?)", text)
    if match is None:
        raise DeviceError("no number in the request")
    return float(match.group(1))


TOOLS = {
    fn.__name__ if fn is not notify else "send_notification": fn
    for fn in (list_devices, get_device_info, set_device_info, set_temperature, lock_door, get_weather, notify)
}
"""The tools by the name the agent calls them."""

ToolCaller = Callable[..., Any]
"""``call(tool_name, **arguments) -> result``: how the planner reaches a tool."""


def reset_home() -> None:
    """Every request starts from the same house, so the cases are independent of their order."""
    global home
    home = copy.deepcopy(_INITIAL_HOME)


@toolpath.agent(name="smart_home_assistant")
def smart_home_agent(prompt: str) -> str:
    """Answer one request about the home. Raises for requests it does not understand."""
    reset_home()
    return plan(prompt, lambda name, **arguments: TOOLS[name](**arguments))


def plan(prompt: str, call: ToolCaller) -> str:
    """The rule-based planner: decides each tool call from the request and earlier results, and answers.

    Every tool goes through ``call``, so the same planner drives the plain-function agent (which calls the tools
    directly) and the scripted chat model of the LangGraph demo (which turns each call into a tool call message).
    """
    text = prompt.lower()
    room = _room(text)

    if "weather" in text:
        city = re.search(r"in ([a-z]+)", text.split("weather", 1)[1])
        city_name = city.group(1).title() if city else "Paris"
        weather = call("get_weather", city=city_name)
        if "cold" in text or "warm" in text:
            weather = call("get_weather", city=city_name)  # flaw: checks again before deciding
            if weather["temperature"] < 10 and room:
                call("set_temperature", location=room, temperature=_number(text.split("to", 1)[1]))
                return f"It is {weather['temperature']} °C in {city_name}, so I warmed the {room.replace('_', ' ')}."
            return f"It is {weather['temperature']} °C in {city_name}; no heating needed."
        return f"It is {weather['sky']} and {weather['temperature']} °C in {city_name}."

    if "lock" in text:
        call("lock_door", door_id="door-front")  # flaw: knows only the front door
        if "notify" in text or "tell" in text:
            call("send_notification", message="The door is locked.")
        return "The door is locked."

    if "which devices" in text or "list" in text:
        devices = call("list_devices", room=room or "living_room")
        return f"The {room} has: {', '.join(devices)}." if devices else f"There are no devices in the {room}."

    if "everything" in text and "off" in text and room:
        for device_id in sorted(call("list_devices", room=room), reverse=True):  # flaw: its own order
            if device_id.startswith("light-"):
                call("set_device_info", device_id=device_id, updates={"power": "off"})
        return f"Everything in the {room.replace('_', ' ')} is off."

    if "light" in text and room:
        device_id = f"light-{room}-1"  # flaw: always the first light of the room
        if "dim" in text or "%" in text:
            updates: dict[str, Any] = {"brightness": int(_number(text))}
            if "warm" in text:
                updates["color"] = {"hue": 30, "saturation": 0.65}
            call("set_device_info", device_id=device_id, updates=updates)
            return f"Dimmed the {room} light to {updates['brightness']}%."
        power = "off" if " off" in text else "on"
        call("set_device_info", device_id=device_id, updates={"power": power})
        return f"Turned the {room} light {power}."

    if room and any(word in text for word in ("temperature", "degrees", "thermostat", "warmer", "cooler", "bit")):
        location = room
        if text.startswith("what"):
            info = call("get_device_info", device_id=f"thermostat-{location}")
            return f"The {room.replace('_', ' ')} is set to {info['temperature']} °C."
        if "a bit" in text:
            target = 21.0 if "warmer" in text else 20.0  # flaw: assumes the usual setting, reads nothing
            call("set_temperature", location=location, temperature=target)
            return f"Set the {room.replace('_', ' ')} to {target} °C."
        if "raise" in text or "lower" in text:
            current = call("get_device_info", device_id=f"thermostat-{location}")["temperature"]
            step = _number(text.split("by", 1)[1]) if " by " in text else _number(text)
            target = current + step if "raise" in text else current - step
            call("set_temperature", location=location, temperature=target)
            return f"Changed the {room.replace('_', ' ')} from {current} to {target} °C."
        value = _number(text)  # flaw: ignores "Fahrenheit"
        try:
            call("set_temperature", location=location, temperature=value)
        except DeviceError as exc:
            return f"Sorry, I could not do that: {exc}."
        return f"Set the {room.replace('_', ' ')} to {value} °C."

    raise NotImplementedError(f"I do not know how to handle: {prompt!r}")
