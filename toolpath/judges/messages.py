"""What a judge is asked and what it answers: one model request, its reply, how a request ended (its outcome and
tokens), the backend that sends a request to a model, and the failure worth another try. Plain types, imported by the
judge (:mod:`toolpath.judges.client`), its backends and the metrics that ask it."""

from __future__ import annotations

import contextvars
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple, Protocol

from toolpath.errors import InternalSignal

__all__ = ["Ask", "CallHold", "JudgeCall", "JudgeOutcome", "JudgeReply", "JudgeRequest", "TransientError"]

DEFAULT_MODEL = "gemini-2.5-flash"
EMPTY_REPLY = "the model returned an empty response"


@dataclass(frozen=True)
class JudgeRequest:
    """One model call. ``sample`` tells repeated samples of one prompt apart (and keys the cache)."""

    prompt: str
    model: str = DEFAULT_MODEL
    temperature: float | None = None
    sample: int = 0
    json_output: bool = True
    config: str | None = None
    """The model's generation config as JSON (google-genai's ``GenerateContentConfig`` fields), sent as given
    (``temperature`` and ``json_output`` are then not used)."""
    namespace: str | None = None
    """Who asks, when it is not a judge metric (``usersim``: the simulated user): keys its cache entries apart."""
    max_output_tokens: int | None = None
    """The most tokens the reply may have, thinking included (sent as the model's ``max_output_tokens`` unless
    ``config`` names one); ``None``: the model's own limit. Not part of the cache key."""

    def cache_key(self) -> str:
        if self.namespace is None:
            text = json.dumps([self.model, self.temperature, self.sample, self.json_output, self.prompt])
            return hashlib.sha256(text.encode()).hexdigest()
        text = json.dumps([self.namespace, self.model, self.config, self.sample, self.json_output, self.prompt])
        prefix = f"{self.namespace}:"
        return prefix + hashlib.sha256(text.encode()).hexdigest()[: 64 - len(prefix)]  # the cache's keys: 64 chars


@dataclass
class JudgeReply:
    """What the model answered (``text``), or why there is no answer (``error``)."""

    text: str | None
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False
    retry_after: float | None = None
    """When the process's judge budget refused the call: the seconds after which it has room again."""
    refused: bool = False
    """Not sent: a budget or the prompt limit said no."""
    over_budget: bool = False
    """Not sent: the asker's budget had no room for the most the call could cost (:mod:`toolpath.judges.call_gate`)."""
    hold: CallHold | None = None
    """The room held for the call in the asker's budget, until its cost is recorded with its results."""


class CallHold(NamedTuple):
    """Room held in a budget for one call sent: where it is held (``key``: the budget's to read, a clock hour) and
    the tokens the call reported, which replaced the most it could have cost."""

    key: int
    input_tokens: int
    output_tokens: int


Ask = Callable[[JudgeRequest], Awaitable[JudgeReply]]
"""What a judge metric awaits to get a model's reply."""


REQUEST_TAG: contextvars.ContextVar[tuple[int, str] | None] = contextvars.ContextVar("judge_tag", default=None)
"""What the judge requests made in this context are for — the row (its index) and the metric a batch scores —
set by whoever runs a metric on a row; each :class:`JudgeCall` carries it, so a batch's spend can be told apart by
its results."""


class JudgeOutcome(StrEnum):
    """How one judge request ended."""

    OK = "ok"
    """The model answered."""
    ERROR = "error"
    """No answer: the model failed after its retries, or its reply could not be read."""
    CACHED = "cached"
    """Answered from the cache: no call made."""
    REFUSED = "refused"
    """Not sent: over a budget, or a prompt past ``max_prompt_chars``."""
    OVER_BUDGET = "over_budget"
    """Not sent: the asker's budget (an online evaluator's) had no room for the most the call could cost."""


@dataclass(frozen=True)
class JudgeCall:
    """One judge request as it ended: the model asked, the outcome, the tokens the model reported and the time
    it took (retries and waits for a slot included)."""

    model: str
    outcome: JudgeOutcome
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    ended_ns: int = 0
    """When it ended (ns since the epoch)."""
    tag: tuple[int, str] | None = None
    """The row and metric it was made for (:data:`REQUEST_TAG`), when known."""
    hold: CallHold | None = None
    """The room its asker's budget holds for it (:attr:`JudgeReply.hold`)."""


class Backend(Protocol):
    async def generate(self, request: JudgeRequest, timeout: float) -> JudgeReply: ...


class TransientError(InternalSignal):
    """A failure worth retrying (429, 5xx, timeout); ``retry_after`` in seconds when the server said;
    ``answered``: whether the model may have answered (and billed) all the same (a reply that did not come in time)."""

    def __init__(self, message: str, retry_after: float | None = None, *, answered: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.answered = answered
