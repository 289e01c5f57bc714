"""A budget that is never passed: before a judge call is sent, room for the most it can cost is held in the budget
(shared with every process that spends from it), and the call is not sent when there is none; once the model has
answered, what it reported replaces what was held.

The most a call can cost is known before it is sent: its input is at most one token per byte of the prompt and of
its config (Gemini's tokenizer falls back to bytes: no token stands for less than one), plus the few tokens that
frame a turn (:data:`FRAMING_TOKENS`); its output, thinking included, at most its ``max_output_tokens``, which the
model enforces. A call with no such limit cannot be bounded, so it is not sent. Cache hits never reach the gate:
they cost nothing. A call the budget has no room for waits while calls in flight hold room they may not need (their
most, not yet their cost), and is refused once they cannot make enough."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from typing import Protocol

from toolpath.judges.genai_backend import GenAIBackend
from toolpath.judges.messages import Backend, CallHold, JudgeReply, JudgeRequest, TransientError

__all__ = ["FRAMING_TOKENS", "BudgetHolds", "GatedBackend", "most_tokens"]

FRAMING_TOKENS = 64
"""Tokens a request may count beyond its text's bytes: the markers of its turn and of a system instruction."""
WAIT_FIRST, WAIT_MOST = 0.05, 1.0
"""Seconds a call waits, doubling, for the calls in flight to answer and give back the room they held beyond their
cost; at most as long as a call's timeout in all."""


class BudgetHolds(Protocol):
    """Where room is held: an online evaluator's budget in the store (its calls are blocking: run off the loop)."""

    def hold(self, model: str, input_tokens: int, output_tokens: int) -> int | bool:
        """Hold room for a call of at most these tokens: the hold's key; or, when there is no room, whether there
        may be once the calls in flight have answered (``True``: wait and ask again; ``False``: refuse)."""
        ...

    def settle(
        self, key: int, model: str, held: tuple[int, int], reported: tuple[int, int] | None, *, ended: bool = False
    ) -> None:
        """Replace the ``held`` tokens (input, output) by those the model ``reported``; ``None``: the call was never
        answered, the room is given back. ``ended``: the call ended without a reply to store (a reply too late, an
        unreadable one): its cost is kept as spent, in the budget's errors, now."""
        ...


def most_tokens(request: JudgeRequest) -> tuple[int, int | None]:
    """The most input tokens ``request`` can count, and the most output tokens (``None``: none can be told: no
    limit is sent, or the config's is not a whole number)."""
    config = request.config or ""
    cap: int | None = request.max_output_tokens
    candidates = 1
    if config:
        given = json.loads(config)
        given = given if isinstance(given, dict) else {}
        own = given.get("max_output_tokens", given.get("maxOutputTokens"))
        if own is not None:
            cap = own if _whole(own) else None  # "50000" would be sent as 50000: not bounded here, not sent
        many = given.get("candidate_count", given.get("candidateCount"))
        if many is not None:  # each candidate up to the limit
            candidates = many if _whole(many) else 0
    size = len(request.prompt.encode()) + len(config.encode()) + FRAMING_TOKENS
    return size, cap * candidates if cap is not None and candidates > 0 else None


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


@dataclass
class GatedBackend:
    """A backend whose every call first holds room in ``holds`` (an attempt each: a retry is a call of its own)."""

    inner: Backend | None
    """``None``: google-genai's, made on the first call (a judge that may never be asked needs no credentials)."""
    holds: BudgetHolds

    async def generate(self, request: JudgeRequest, timeout: float) -> JudgeReply:
        if self.inner is None:
            self.inner = GenAIBackend()
        inner = self.inner
        most_in, most_out = most_tokens(request)
        if most_out is None:
            return JudgeReply(None, _UNBOUNDED, refused=True)
        waited, pause = 0.0, WAIT_FIRST
        while (key := await self._hold(request.model, (most_in, most_out))) is True:
            if waited >= timeout:  # the calls in flight take longer than a call may: not worth waiting for
                break
            await asyncio.sleep(pause)
            waited, pause = waited + pause, min(pause * 2, WAIT_MOST)
        if isinstance(key, bool):
            return JudgeReply(None, _NO_ROOM.format(most_in + most_out), refused=True, over_budget=True)
        held = (most_in, most_out)
        try:
            reply = await inner.generate(request, timeout)
        except TransientError as exc:  # a 429 or 5xx costs nothing; a reply that came too late may have cost it all
            await self._settle(key, request.model, held, held if exc.answered else None, ended=True)
            raise
        except BaseException:  # unreadable, or given up on: what it cost is unknown, the most is kept
            await self._settle(key, request.model, held, held, ended=True)
            raise
        reported = (reply.input_tokens, reply.output_tokens)
        await self._settle(key, request.model, held, reported)
        return replace(reply, hold=CallHold(key, *reported))

    async def _hold(self, model: str, most: tuple[int, int]) -> int | bool:
        """A hold, made in a thread; one made as the caller is cancelled is given back, not lost."""
        made = asyncio.ensure_future(asyncio.to_thread(self.holds.hold, model, *most))
        try:
            return await asyncio.shield(made)
        except asyncio.CancelledError:
            made.add_done_callback(lambda done: self._give_back(done, model, most))
            raise

    def _give_back(self, done: asyncio.Future[int | bool], model: str, most: tuple[int, int]) -> None:
        key = None if done.cancelled() or done.exception() is not None else done.result()
        if isinstance(key, int) and not isinstance(key, bool):
            work = asyncio.ensure_future(asyncio.to_thread(self.holds.settle, key, model, most, None))
            _KEPT.add(work)
            work.add_done_callback(_KEPT.discard)

    async def _settle(
        self, key: int, model: str, held: tuple[int, int], reported: tuple[int, int] | None, *, ended: bool = False
    ) -> None:
        """A settle, made in a thread, that a cancelled caller does not stop halfway."""
        work = asyncio.ensure_future(asyncio.to_thread(self.holds.settle, key, model, held, reported, ended=ended))
        _KEPT.add(work)
        work.add_done_callback(_KEPT.discard)
        await asyncio.shield(work)


_KEPT: set[asyncio.Future[None]] = set()
"""Settles under way whose callers were cancelled (kept referenced until they end)."""
_UNBOUNDED = (
    "not sent: the judge budget cannot bound a call without a whole max_output_tokens (nor with a candidate_count "
    "that is not one)"
)
_NO_ROOM = "not sent: the evaluator's judge budget has no room left for this call (at most {} tokens)"
