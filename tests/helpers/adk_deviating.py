"""A real Google ADK agent that deviates from its eval sets on purpose, scripted (no network), and the suite of eval
sets it is judged by — for holding toolpath's scores to ADK's own evaluator on the same agent.

- :func:`build_deviating_agent`: ``concierge`` (tools get_weather, lookup_order, list_stores, get_customer,
  set_notifications) with a sub-agent ``billing`` (tool refund) it transfers to.
- :func:`deviations_evalset`: the eval set, whose cases the agent misses in every way listed in
  :data:`DEVIATIONS`; answers in Latin with accents, Chinese, Japanese with ``・``, Korean, Thai with digits and
  full-width digits; a multi-turn case with a ``session_input``, whose first turn's user content has two text
  parts.
- :func:`write_deviation_suite`: the agent as a user's folder (``deviating_agent/agent.py`` with ``root_agent``)
  and ``sets/{exact,in_order,any_order}/deviations.evalset.json``, each with its own ``test_config.json``.
- :data:`USER_PARTS`: the text parts of every user message the agent's models were asked about, in order.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from tests.helpers.adk_agent import ScriptedModel, answer, call, calls

USER_PARTS: list[list[str]] = []
"""Per model request, the text parts of the latest user message in it."""

WEATHER = "¿Qué tiempo hace en Málaga?"
ORDERS = "查询订单 A-1 和 B-2"
TOKYO_OSAKA = "東京・大阪の天気は？"
SEOUL = "서울 날씨와 매장 목록을 알려 주세요"
NOTIFY = "ปิดการแจ้งเตือนคำสั่งซื้อ 42"
STORES = "店舗はいくつありますか？　２０２４年版"
GREETING = ("Hallo, ich bin Zoë.", "Wie heiße ich?")
"""The two text parts of the multi-turn case's first user message."""
REFUND = "Erstatte Bestellung A-1, bitte."

DEVIATIONS = {
    "wrong_args": "get_weather(city='Malaga'): the reference says 'Málaga'",
    "swapped_order": "lookup_order B-2 before A-1",
    "extra_call": "two get_weather calls in one model turn, then an extra one; the answer in two text parts",
    "missing_call": "no list_stores call",
    "zero_false": "set_notifications(enabled=0) against enabled: false (equal, as in Python)",
    "no_args": "list_stores with args {} against a reference without args",
    "no_reference": "no reference response",
    "multi_turn": "a two-part user message; get_customer without args against a reference without args; "
    "a transfer to billing; no reference response in the second turn",
}
"""Each case of :func:`deviations_evalset` and how the agent misses it."""


class PartsRecordingModel(ScriptedModel):
    """A :class:`ScriptedModel` that also records the text parts of the latest user message it is sent."""

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        users = [c for c in llm_request.contents if c.role == "user" and any(p.text for p in c.parts or [])]
        if users:
            USER_PARTS.append([p.text for p in users[-1].parts or [] if p.text])
        async for response in super().generate_content_async(llm_request, stream):
            yield response


def no_args_call(name: str) -> types.Part:
    """A function call with no ``args`` at all (``None``, not ``{}``)."""
    return types.Part(function_call=types.FunctionCall(name=name))


def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "celsius": 24}


def lookup_order(order_id: str) -> dict[str, Any]:
    """An order's status."""
    return {"order_id": order_id, "status": "shipped" if order_id == "A-1" else "processing"}


def list_stores() -> dict[str, Any]:
    """The stores."""
    return {"stores": ["Shibuya", "Umeda", "Sakae"]}


def get_customer(tool_context: ToolContext) -> dict[str, Any]:
    """The customer of the session (from its state)."""
    return {"customer": tool_context.state.get("customer")}


def set_notifications(order_id: str, enabled: bool) -> dict[str, Any]:
    """Turn an order's notifications on or off."""
    return {"order_id": order_id, "enabled": enabled}


def refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an order."""
    return {"order_id": order_id, "refunded": amount}


def build_deviating_agent() -> LlmAgent:
    billing = LlmAgent(
        name="billing",
        description="Refunds orders.",
        model=PartsRecordingModel(
            turns={
                REFUND: [
                    calls(call("refund", order_id="A-1", amount=12.5)),
                    answer("Erstattet: 12,50 € für A-1."),
                ]
            }
        ),
        tools=[refund],
    )
    return LlmAgent(
        name="concierge",
        description="Answers customers.",
        instruction="Help the customer.",
        model=PartsRecordingModel(
            turns={
                WEATHER: [calls(call("get_weather", city="Malaga")), answer("En Málaga hace 24 °C y sol.")],
                ORDERS: [
                    calls(call("lookup_order", order_id="B-2")),
                    calls(call("lookup_order", order_id="A-1")),
                    answer("订单 A-1 已发货，B-2 处理中。"),
                ],
                TOKYO_OSAKA: [
                    calls(call("get_weather", city="東京"), call("get_weather", city="大阪")),
                    calls(call("get_weather", city="京都")),
                    answer("東京・晴れ 24度", "大阪・曇り 24度"),
                ],
                SEOUL: [calls(call("get_weather", city="서울")), answer("서울은 24도이고 맑습니다.")],
                NOTIFY: [
                    calls(call("set_notifications", order_id="42", enabled=0)),
                    answer("ปิดการแจ้งเตือนคำสั่งซื้อ 42 แล้ว"),
                ],
                STORES: [calls(call("list_stores")), answer("店舗は３店です（２０２４年）。")],
                "".join(GREETING): [calls(no_args_call("get_customer")), answer("Du heißt Zoë.")],
                REFUND: [calls(call("transfer_to_agent", agent_name="billing"))],
            }
        ),
        tools=[get_weather, lookup_order, list_stores, get_customer, set_notifications],
        sub_agents=[billing],
    )


def _content(role: str, *texts: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text} for text in texts]}


def _turn(prompt: str | tuple[str, ...], response: str | None, *tool_uses: dict[str, Any]) -> dict[str, Any]:
    texts = (prompt,) if isinstance(prompt, str) else prompt
    turn: dict[str, Any] = {
        "user_content": _content("user", *texts),
        "intermediate_data": {"tool_uses": list(tool_uses), "tool_responses": [], "intermediate_responses": []},
    }
    if response is not None:
        turn["final_response"] = _content("model", response)
    return turn


def _use(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def deviations_evalset(eval_set_id: str = "deviations") -> dict[str, Any]:
    """The eval set of :data:`DEVIATIONS`, as ADK's JSON."""

    def case(eval_id: str, *turns: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"eval_id": eval_id, "conversation": list(turns), **extra}

    return {
        "eval_set_id": eval_set_id,
        "eval_cases": [
            case(
                "wrong_args",
                _turn(WEATHER, "En Málaga hace 24 °C y está soleado.", _use("get_weather", city="Málaga")),
            ),
            case(
                "swapped_order",
                _turn(
                    ORDERS,
                    "订单 A-1 已发货；订单 B-2 正在处理。",
                    _use("lookup_order", order_id="A-1"),
                    _use("lookup_order", order_id="B-2"),
                ),
            ),
            case(
                "extra_call",
                _turn(
                    TOKYO_OSAKA,
                    "東京・晴れ 24度\n大阪・曇り 23度",
                    _use("get_weather", city="東京"),
                    _use("get_weather", city="大阪"),
                ),
            ),
            case(
                "missing_call",
                _turn(
                    SEOUL,
                    "서울은 24도이고 맑습니다. 매장은 3곳입니다.",
                    _use("get_weather", city="서울"),
                    _use("list_stores"),
                ),
            ),
            case(
                "zero_false",
                _turn(
                    NOTIFY,
                    "ปิดการแจ้งเตือนคำสั่งซื้อ 42 เรียบร้อยแล้ว",
                    _use("set_notifications", order_id="42", enabled=False),
                ),
            ),
            case("no_args", _turn(STORES, "店舗は３店あります（２０２４年）。", {"name": "list_stores"})),
            case("no_reference", _turn(WEATHER, None, _use("get_weather", city="Malaga"))),
            case(
                "multi_turn",
                _turn(GREETING, "Du heißt Zoë!", {"name": "get_customer"}),
                _turn(
                    REFUND,
                    None,
                    _use("transfer_to_agent", agent_name="billing"),
                    _use("refund", order_id="A-1", amount=12.5),
                ),
                session_input={"app_name": "shop", "user_id": "zoe", "state": {"customer": "Zoë"}},
            ),
        ],
    }


CONFIGS: dict[str, dict[str, Any]] = {
    "exact": {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}},
    "in_order": {
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
            "response_match_score": {"threshold": 0.5},
        }
    },
    "any_order": {"criteria": {"tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "ANY_ORDER"}}},
}
"""The ``test_config.json`` of each eval set of the suite (folder name -> config)."""


def write_deviation_suite(folder: Path, name: str = "deviating_agent") -> Path:
    """The agent as a user's folder ``folder/name`` and the eval sets ``folder/sets/KIND/deviations.evalset.json``
    with their ``test_config.json`` (:data:`CONFIGS`). Returns the ``sets`` folder."""
    package = folder / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text(
        "from tests.helpers.adk_deviating import build_deviating_agent\n\nroot_agent = build_deviating_agent()\n"
    )
    sets = folder / "sets"
    for kind, config in CONFIGS.items():
        (sets / kind).mkdir(parents=True, exist_ok=True)
        evalset = deviations_evalset(f"deviations_{kind}")
        (sets / kind / "deviations.evalset.json").write_text(json.dumps(evalset, indent=1, ensure_ascii=False))
        (sets / kind / "test_config.json").write_text(json.dumps(config, indent=1))
    return sets
