"""The LLM judge: one backend, the ``google-genai`` SDK, behind a small interface.

Judge metrics never call a model themselves: they receive an :data:`Ask` and await it with a prompt. The
:class:`Judge` behind it runs every request of an evaluation on one event loop with a concurrency limit,
retries 429 / 5xx / timeouts with exponential backoff (``Retry-After`` honoured), stops at a per-run budget,
records token usage, and looks each request up in a cache first (the store keeps one), so re-scoring recorded
traffic costs nothing. The SDK is configured its standard way, from the environment: ``GOOGLE_API_KEY`` /
``GEMINI_API_KEY``, or ``GOOGLE_GENAI_USE_VERTEXAI`` with ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``;
``GOOGLE_GEMINI_BASE_URL`` points it elsewhere (a proxy, or the fake server of the tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolpath.config import JUDGE_CONCURRENCY_ENV, JUDGE_MAX_REQUESTS_ENV, JUDGE_MODEL_ENV
from toolpath.errors import ConfigError
from toolpath.judges.call_slots import CallSlots
from toolpath.judges.genai_backend import GenAIBackend
from toolpath.judges.messages import (
    DEFAULT_MODEL,
    EMPTY_REPLY,
    REQUEST_TAG,
    Ask,
    Backend,
    JudgeCall,
    JudgeOutcome,
    JudgeReply,
    JudgeRequest,
    TransientError,
)
from toolpath.judges.process_budget import BudgetSpent, WhenSpent, process_budget
from toolpath.redact import Redactor

__all__ = [  # the request and reply types live in :mod:`toolpath.judges.messages`; named here for the judge's users
    "DEFAULT_MODEL",
    "EMPTY_REPLY",
    "REQUEST_TAG",
    "Ask",
    "Backend",
    "JudgeCall",
    "JudgeOutcome",
    "JudgeReply",
    "JudgeRequest",
    "JudgeSettings",
    "TransientError",
]

logger = logging.getLogger("toolpath.judge")


class JudgeCache(Protocol):
    """Replies by request key; :class:`toolpath.store.store.Store` implements it."""

    def judge_replies(self, keys: list[str]) -> dict[str, dict[str, Any]]: ...

    def save_judge_replies(self, rows: list[dict[str, Any]], *, replace: bool = False) -> None: ...


@dataclass
class JudgeSettings:
    model: str = DEFAULT_MODEL
    concurrency: int = 32
    """Requests in flight at once."""
    timeout: float = 60.0
    """Seconds per attempt."""
    max_attempts: int = 5
    backoff: float = 0.5
    """First retry delay in seconds; doubled per attempt (with jitter), capped at 30 s."""
    max_requests: int | None = None
    """Budget: model calls per run (cache hits are free); requests past it get an error, not a score."""
    max_tokens: int | None = None
    """Budget: input + output tokens per run."""
    max_output_tokens: int | None = None
    """The most tokens a reply may have, thinking included (the model's ``max_output_tokens``, unless a request's
    own config names one); ``None``: the model's own limit. A call past it is cut short (and its verdict unread)."""
    max_prompt_chars: int = 1_000_000
    """The longest prompt sent to the judge (about 250,000 tokens); a longer one is an error, never sent. Prompts
    filled from a request's template are measured before they are built."""


@dataclass
class JudgeUsage:
    requests: int = 0
    cached: int = 0
    retries: int = 0
    errors: int = 0
    over_budget: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Judge:
    """Runs judge requests for one evaluation: concurrency, retries, budget, cache, usage."""

    settings: JudgeSettings = field(default_factory=JudgeSettings)
    cache: JudgeCache | None = None
    backend: Backend | None = None
    usage: JudgeUsage = field(default_factory=JudgeUsage)
    fresh: bool = False
    """Ask the model even where the cache has a reply, and keep the new reply there instead."""
    cache_redactor: Redactor | None = None
    """The rules a reply is redacted with before the cache keeps it (``None``: the default rules)."""
    when_spent: WhenSpent = WhenSpent.WAIT
    """When the process's judge budget (:mod:`toolpath.judges.process_budget`) is spent: wait for room (an
    evaluation someone started) or refuse the call at once (a request, online scoring)."""
    slots: CallSlots | None = None
    """Model calls in flight, bounded across every run of the judges sharing these slots (an online evaluator's
    ``concurrency``, all its workers together); ``None``: only ``settings.concurrency`` per run."""
    on_call: Callable[[JudgeCall], None] | None = None
    """Told each request as it ends (online evaluation records its evaluators' judge spend with it)."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[dict[str, Any]] = []

    def connect(self) -> Judge:
        """Make the backend now (the SDK's client, from the environment's credentials): no credentials is a
        :class:`ConfigError` here, before an evaluation starts, not halfway through it."""
        if self.backend is None:
            self.backend = GenAIBackend()
        return self

    def run(self, work: Callable[[Ask], Coroutine[Any, Any, Any]]) -> Any:
        """Run ``work(ask)`` to completion on the judges' event loop (one for the process, on a daemon thread, so
        the SDK's connections, bound to the loop that opened them, serve every run), then save new replies to the
        cache. Works the same from a thread that runs a loop of its own, as in a notebook."""
        self.connect()

        async def main() -> Any:
            semaphore = asyncio.Semaphore(self.settings.concurrency)

            async def ask(request: JudgeRequest) -> JudgeReply:
                async with semaphore:
                    return await self._ask(request)

            return await work(ask)

        future = asyncio.run_coroutine_threadsafe(main(), _judge_loop())
        try:
            result = future.result()
        except BaseException:
            future.cancel()
            raise
        finally:
            self._flush_cache()
        return result

    async def _ask(self, request: JudgeRequest) -> JudgeReply:
        started = time.monotonic()
        reply = await self._answer(request)
        if self.on_call is not None:
            outcome = (
                JudgeOutcome.CACHED if reply.cached
                else JudgeOutcome.OK if reply.error is None
                else JudgeOutcome.OVER_BUDGET if reply.over_budget
                else JudgeOutcome.REFUSED if reply.refused
                else JudgeOutcome.ERROR
            )  # fmt: skip
            seconds = time.monotonic() - started
            self.on_call(
                JudgeCall(
                    request.model,
                    outcome,
                    reply.input_tokens,
                    reply.output_tokens,
                    seconds,
                    time.time_ns(),
                    REQUEST_TAG.get(),
                    reply.hold,
                )
            )
        return reply

    async def _answer(self, request: JudgeRequest) -> JudgeReply:
        key = request.cache_key()
        if self.cache is not None and not self.fresh:
            hit = self.cache.judge_replies([key]).get(key)
            if hit is not None:
                self.usage.cached += 1
                return JudgeReply(hit["reply"], None, hit["input_tokens"], hit["output_tokens"], cached=True)
        size = len(request.prompt) + len(request.config or "")  # a system instruction is sent too
        if size > self.settings.max_prompt_chars:
            self.usage.errors += 1
            return JudgeReply(None, prompt_too_long(size, self.settings.max_prompt_chars), refused=True)
        over = self._over_budget()
        if over:
            self.usage.over_budget += 1
            return JudgeReply(None, over, refused=True)
        self.usage.requests += 1  # counted when sent, so requests in flight count against the budget too
        budget = process_budget()
        if self.settings.max_output_tokens is not None and request.max_output_tokens is None:
            request = dataclasses.replace(request, max_output_tokens=self.settings.max_output_tokens)
        try:
            async with self.slots.slot() if self.slots is not None else contextlib.nullcontext(), budget.slot():
                reply = await self._with_retries(request)
        except BudgetSpent as spent:
            self.usage.requests -= 1
            self.usage.over_budget += 1
            return JudgeReply(None, str(spent), retry_after=spent.retry_after, refused=True)
        except Exception as exc:  # an unreadable reply (a proxy's HTML page), an SDK error: this request's error
            logger.warning("toolpath: judge request failed: %s: %s", type(exc).__name__, exc)
            reply = JudgeReply(None, f"judge request failed: {type(exc).__name__}: {exc}")
        budget.spent_tokens(reply.input_tokens + reply.output_tokens)
        self.usage.input_tokens += reply.input_tokens
        self.usage.output_tokens += reply.output_tokens
        if reply.over_budget:  # not sent after all
            self.usage.requests -= 1
            self.usage.over_budget += 1
        elif reply.error:
            self.usage.errors += 1
        elif self.cache is not None:
            with self._lock:
                self._pending.append(
                    {
                        "key": key,
                        "model": request.model,
                        "reply": reply.text,
                        "input_tokens": reply.input_tokens,
                        "output_tokens": reply.output_tokens,
                    }
                )
        return reply

    def _over_budget(self) -> str | None:
        s, u = self.settings, self.usage
        if s.max_requests is not None and u.requests >= s.max_requests:
            return f"judge budget exhausted: {s.max_requests} request(s) per run"
        if s.max_tokens is not None and u.input_tokens + u.output_tokens >= s.max_tokens:
            return f"judge budget exhausted: {s.max_tokens} token(s) per run"
        return None

    async def _with_retries(self, request: JudgeRequest) -> JudgeReply:
        assert self.backend is not None
        delay = self.settings.backoff
        for attempt in range(1, self.settings.max_attempts + 1):
            try:
                # each attempt is a call to the model: the process's budget counts it (a first one refused is
                # BudgetSpent for the caller; a retry refused ends the request with what it has)
                await process_budget().admit(self.when_spent)
            except BudgetSpent as spent:
                if attempt == 1:
                    raise
                return JudgeReply(None, f"judge model unavailable after {attempt - 1} attempt(s), {spent}",
                                  retry_after=spent.retry_after)  # fmt: skip
            try:
                return await self.backend.generate(request, self.settings.timeout)
            except TransientError as exc:
                if attempt == self.settings.max_attempts:
                    return JudgeReply(None, f"judge model unavailable after {attempt} attempt(s): {exc}")
                self.usage.retries += 1
                wait = exc.retry_after if exc.retry_after is not None else delay * (1 + random.random() / 2)
                await asyncio.sleep(min(wait, 30.0))
                delay *= 2
        raise AssertionError("unreachable")

    def _flush_cache(self) -> None:
        with self._lock:
            pending, self._pending = list({row["key"]: row for row in self._pending}.values()), []
        if pending and self.cache is not None:
            # a reply may quote its prompt (a request's own values, never redacted): kept redacted, as spans are
            redactor = self.cache_redactor or _default_redactor()
            for row in pending:
                row["reply"] = redactor.value(row["reply"])
            try:
                if self.fresh:
                    self.cache.save_judge_replies(pending, replace=True)
                else:
                    self.cache.save_judge_replies(pending)
            except Exception:  # a cache that cannot be written costs a re-ask next time, nothing more
                logger.warning("toolpath: could not save %d judge replies to the cache", len(pending), exc_info=True)


@functools.lru_cache(maxsize=1)
def _default_redactor() -> Redactor:
    return Redactor()


def prompt_too_long(length: int, limit: int) -> str:
    """The error of a judge prompt over the ``max_prompt_chars`` limit."""
    return f"the judge prompt would be {length} characters, over the limit of {limit} (judge setting max_prompt_chars)"


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _judge_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="toolpath-judge", daemon=True).start()
        return _loop


def settings_from(options: Mapping[str, Any] | None, base: JudgeSettings | None = None) -> JudgeSettings:
    """Settings from ``TOOLPATH_JUDGE_*`` environment variables, then ``options`` (keys as the fields)."""
    settings = base or JudgeSettings()
    env = {
        "model": os.environ.get(JUDGE_MODEL_ENV),
        "concurrency": os.environ.get(JUDGE_CONCURRENCY_ENV),
        "max_requests": os.environ.get(JUDGE_MAX_REQUESTS_ENV),
    }
    names = {"model": JUDGE_MODEL_ENV, "concurrency": JUDGE_CONCURRENCY_ENV, "max_requests": JUDGE_MAX_REQUESTS_ENV}
    values = {k: v for k, v in env.items() if v is not None}
    given = {k: v for k, v in (options or {}).items() if v is not None}
    values.update(given)
    for key, value in values.items():
        if not hasattr(settings, key):
            raise ConfigError(f"unknown judge setting {key!r}")
        current = getattr(settings, key)
        kind = type(current) if current is not None else int
        try:
            setattr(settings, key, kind(value))
        except (TypeError, ValueError):
            where = f"judge setting {key}" if key in given else f"${names[key]}"
            wanted = {int: "a whole number", float: "a number", str: "text"}.get(kind, kind.__name__)
            raise ConfigError(f"{where}: {value!r} is not {wanted}") from None
    return settings
