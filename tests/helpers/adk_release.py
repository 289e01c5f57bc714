"""A multi-agent ADK app to gate a release on, driven by scripted models (no network), and the eval sets it is judged
by: every kind of call ADK's evaluation reads, with personal data and secrets in arguments and answers.

- :func:`build_shop`: ``coordinator`` with an ``AgentTool`` (``order_lookup``, which calls ``find_order``), a
  transfer to ``billing_agent`` (``refund``), a transfer to the workflow ``fulfilment`` (a ``SequentialAgent`` of a
  ``ParallelAgent`` [``stock_agent``: ``get_stock``, ``price_agent``: ``get_price``] and ``summary_agent``), two
  ``get_stock`` calls in one model response, a tool error its ``on_tool_error_callback`` turns into a result
  (``get_stock(sku="X-404")``) and one that raises (``charge``), nested non-ASCII arguments, e-mail addresses and
  tokens in arguments and answers. Every model response reports its token usage (ADK counts it as a model call).
- :func:`release_evalset`: the cases (:data:`CASES`), some passed and some missed under each match type.
- :func:`write_release_suite`: the app as a user's folder (``shop_agent/agent.py`` with ``root_agent``) and
  ``sets/KIND/release.evalset.json`` with the ``test_config.json`` of each of :data:`CONFIGS` (both forms).
- :data:`SECRETS`: every e-mail address and token the app and its eval sets hold.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent, ParallelAgent, SequentialAgent
from google.adk.tools.agent_tool import AgentTool

from tests.helpers.adk_agent import ScriptedModel, answer, call, calls, counting_model

EMAIL = "zoe.kowalska@example.com"
OTHER_EMAIL = "zoe@example.org"
TOKEN = "tok_9f8e7d6c5b4a3921"
"""An argument named ``token`` (redacted by its key)."""
OTHER_TOKEN = "tok_0000aaaa1111bbbb"
API_KEY = "sk-proj-Q7x2Lm9Kp4Rt8Vw1Zy6Nb3Hc"
BEARER = "7Hq2Wm9Xv4LpK8sd"
SECRETS = (EMAIL, OTHER_EMAIL, TOKEN, OTHER_TOKEN, API_KEY, BEARER)

WHERE = "Where is order 7?"
ORDER = f"Bestelle 2× 茶 für Zoë ({EMAIL})."
STOCK = "在庫を確認: 茶-01 と café-02"
MISSING = "Is X-404 in stock?"
SIGN_IN = "Sign me in, please."
MAIL = "Schick mir die Bestätigung."
REFUND = "Refund order 7, please."
FULFIL = "Fulfil order 7."
CRASH = "Charge order 7."
HELLO = "Hello again?"

CUSTOMER = {
    "name": "Zoë Kowalska",
    "email": EMAIL,
    "address": {"city": "Kraków", "street": "ul. Świętej Anny 7", "tags": ["près", "東京"]},
}
ITEMS = [{"sku": "茶-01", "qty": 2, "note": "緑茶・無糖"}]
ORDERED = f"Bestellung A-1 für {EMAIL} angelegt."
STOCKED = "茶-01: 5個、café-02: 0個"
SIGNED_IN = f"Signed in. Your key is {API_KEY}; send Authorization: Bearer {BEARER}."
SENT = f"Gesendet an {EMAIL}."
REFUNDED = f"Order 7 is refunded; the receipt goes to {EMAIL}."
SUMMARY = "茶-01 ist vorrätig: 4,20 €."
TOKENS = {
    "coordinator": (10, 1),
    "order_lookup": (5, 2),
    "billing_agent": (7, 3),
    "stock_agent": (4, 1),
    "price_agent": (6, 2),
    "summary_agent": (3, 4),
}
"""(prompt, answer) tokens each agent's model reports per call."""


def find_order(order: int) -> dict[str, Any]:
    """Where an order is."""
    return {"order": order, "status": "shipped"}


def create_order(customer: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """Create an order for a customer."""
    return {"order": "A-1", "customer": customer["email"], "items": len(items)}


def get_stock(sku: str) -> dict[str, Any]:
    """How many of an article are in stock."""
    stock = {"茶-01": 5, "café-02": 0}
    if sku not in stock:
        raise KeyError(f"unknown sku {sku}")
    return {"sku": sku, "count": stock[sku]}


def get_price(sku: str, currency: str) -> dict[str, Any]:
    """An article's price."""
    return {"sku": sku, "price": "4,20", "currency": currency}


def authenticate(token: str) -> dict[str, Any]:
    """Sign the user in."""
    return {"signed_in": True, "api_key": API_KEY}


def send_email(to: str, subject: str, body: str) -> dict[str, Any]:
    """Send an e-mail."""
    return {"sent": True, "to": to}


def refund(order: int, contact: dict[str, Any]) -> dict[str, Any]:
    """Refund an order."""
    return {"order": order, "refunded": True, "receipt": contact["email"]}


def charge(order: int, card: dict[str, Any]) -> dict[str, Any]:
    """Charge an order to a card."""
    raise RuntimeError(f"payment gateway down for order {order}")


def handle_stock_error(tool: Any, args: dict[str, Any], tool_context: Any, error: Exception) -> dict[str, Any] | None:
    """The agent's handling of a tool error: ``get_stock``'s becomes its result; any other tool's is raised."""
    if tool.name == "get_stock":
        return {"error": str(error)}
    return None


def _model(agent: str, turns: dict[str, list[Any]]) -> ScriptedModel:
    return counting_model(agent, TOKENS[agent], turns)


def build_shop() -> LlmAgent:
    """The root agent, with fresh scripted models."""
    lookup = LlmAgent(
        name="order_lookup",
        description="Finds where an order is.",
        model=_model("order_lookup", {"order 7": [calls(call("find_order", order=7)), answer("Order 7 shipped.")]}),
        tools=[find_order],
    )
    billing = LlmAgent(
        name="billing_agent",
        description="Handles refunds.",
        model=_model(
            "billing_agent",
            {REFUND: [calls(call("refund", order=7, contact={"email": EMAIL, "name": "Zoë"})), answer(REFUNDED)]},
        ),
        tools=[refund],
    )
    stock = LlmAgent(
        name="stock_agent",
        model=_model("stock_agent", {FULFIL: [calls(call("get_stock", sku="茶-01")), answer("茶-01: 5個")]}),
        tools=[get_stock],
    )
    price = LlmAgent(
        name="price_agent",
        model=_model(
            "price_agent", {FULFIL: [calls(call("get_price", sku="茶-01", currency="€")), answer("茶-01: 4,20 €")]}
        ),
        tools=[get_price],
    )
    summary = LlmAgent(name="summary_agent", model=_model("summary_agent", {FULFIL: [answer(SUMMARY)]}))
    fulfilment = SequentialAgent(
        name="fulfilment",
        description="Checks stock and price, then sums up.",
        sub_agents=[ParallelAgent(name="checks", sub_agents=[stock, price]), summary],
    )
    return LlmAgent(
        name="coordinator",
        model=_model(
            "coordinator",
            {
                WHERE: [calls(call("order_lookup", request="order 7")), answer("It has shipped.")],
                ORDER: [calls(call("create_order", customer=CUSTOMER, items=ITEMS)), answer(ORDERED)],
                STOCK: [calls(call("get_stock", sku="茶-01"), call("get_stock", sku="café-02")), answer(STOCKED)],
                MISSING: [calls(call("get_stock", sku="X-404")), answer("Sorry, X-404 does not exist.")],
                SIGN_IN: [calls(call("authenticate", token=TOKEN)), answer(SIGNED_IN)],
                MAIL: [
                    calls(call("send_email", to=EMAIL, subject="Bestätigung", body="Grüße aus Kraków")),
                    answer(SENT),
                ],
                REFUND: [calls(call("transfer_to_agent", agent_name="billing_agent"))],
                FULFIL: [calls(call("transfer_to_agent", agent_name="fulfilment"))],
                CRASH: [calls(call("charge", order=7, card={"holder": "Zoë", "email": EMAIL}))],
                HELLO: [answer("Hello!")],
            },
        ),
        tools=[AgentTool(agent=lookup), create_order, get_stock, authenticate, send_email, charge],
        sub_agents=[billing, fulfilment],
        on_tool_error_callback=handle_stock_error,
    )


def _use(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def _turn(prompt: str, response: str, tool_uses: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {"tool_uses": tool_uses, "tool_responses": [], "intermediate_responses": []},
    }


ORDER_TURN = _turn(ORDER, ORDERED, [_use("create_order", customer=CUSTOMER, items=ITEMS)])
CASES: dict[str, list[dict[str, Any]]] = {
    "where": [_turn(WHERE, "It has shipped.", [_use("order_lookup", request="order 7")])],
    "order": [ORDER_TURN],
    "order_other_email": [
        _turn(
            ORDER,
            ORDERED.replace(EMAIL, OTHER_EMAIL),
            [_use("create_order", customer={**CUSTOMER, "email": OTHER_EMAIL}, items=ITEMS)],
        )
    ],
    "stock_swapped": [_turn(STOCK, STOCKED, [_use("get_stock", sku="café-02"), _use("get_stock", sku="茶-01")])],
    "stock_one_call": [_turn(STOCK, "茶-01: 5個", [_use("get_stock", sku="茶-01")])],
    "handled_error": [_turn(MISSING, "Sorry, X-404 does not exist.", [_use("get_stock", sku="X-404")])],
    "sign_in": [_turn(SIGN_IN, SIGNED_IN, [_use("authenticate", token=TOKEN)])],
    "sign_in_other_token": [
        _turn(SIGN_IN, SIGNED_IN.replace(API_KEY, "sk-proj-" + "0" * 24), [_use("authenticate", token=OTHER_TOKEN)])
    ],
    "order_then_mail": [
        ORDER_TURN,
        _turn(MAIL, SENT, [_use("send_email", to=EMAIL, subject="Bestätigung", body="Grüße aus Kraków")]),
    ],
    "order_then_mail_other": [
        ORDER_TURN,
        _turn(
            MAIL,
            f"Gesendet an {OTHER_EMAIL}.",
            [_use("send_email", to=OTHER_EMAIL, subject="Bestätigung", body="Grüße aus Kraków")],
        ),
    ],
    "refund": [
        _turn(
            REFUND,
            REFUNDED,
            [
                _use("transfer_to_agent", agent_name="billing_agent"),
                _use("refund", order=7, contact={"email": EMAIL, "name": "Zoë"}),
            ],
        )
    ],
    "fulfil": [
        _turn(
            FULFIL,
            SUMMARY,
            [
                _use("transfer_to_agent", agent_name="fulfilment"),
                _use("get_stock", sku="茶-01"),
                _use("get_price", sku="茶-01", currency="€"),
            ],
        )
    ],
    "crash_then_hello": [
        _turn(CRASH, "Charged.", [_use("charge", order=7, card={"holder": "Zoë", "email": EMAIL})]),
        _turn(HELLO, "Hello!", []),
    ],
}
"""Each case's conversation: the app passes ``where``, ``order``, ``handled_error``, ``sign_in``,
``order_then_mail``, ``refund`` and ``fulfil``; calls the reference's parallel calls in the other order
(``stock_swapped``) or one more (``stock_one_call``); misses another e-mail address or token
(``*_other*``); and crashes in turn 1 of 2 (``crash_then_hello``)."""

CONFIGS: dict[str, dict[str, Any]] = {
    "floats": {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}},
    "exact": {
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "EXACT"},
            "response_match_score": {"threshold": 0.8},
        }
    },
    "in_order": {
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
            "response_match_score": 0.6,
        }
    },
    "any_order": {
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "ANY_ORDER"},
            "response_match_score": {"threshold": 0.9},
        }
    },
}
"""Each eval set's ``test_config.json``: thresholds as numbers, and criteria as objects under each match type."""


def release_evalset(eval_set_id: str) -> dict[str, Any]:
    return {
        "eval_set_id": eval_set_id,
        "eval_cases": [
            {
                "eval_id": eval_id,
                "conversation": conversation,
                "session_input": {"app_name": "app", "user_id": "u", "state": {}},
            }
            for eval_id, conversation in CASES.items()
        ],
    }


def write_release_suite(folder: Path, name: str = "shop_agent") -> Path:
    """The app as a user's folder ``folder/name`` and ``folder/sets/KIND/release.evalset.json`` with the
    ``test_config.json`` of each of :data:`CONFIGS`. Returns the ``sets`` folder."""
    package = folder / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text("from tests.helpers.adk_release import build_shop\n\nroot_agent = build_shop()\n")
    sets = folder / "sets"
    for kind, config in CONFIGS.items():
        (sets / kind).mkdir(parents=True, exist_ok=True)
        evalset = release_evalset(f"release_{kind}")
        (sets / kind / "release.evalset.json").write_text(json.dumps(evalset, indent=1, ensure_ascii=False))
        (sets / kind / "test_config.json").write_text(json.dumps(config, indent=1))
    return sets
