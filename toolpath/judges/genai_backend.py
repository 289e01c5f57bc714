"""The judge's one backend: ``google-genai``'s async client, one per event loop, its own retries off (the judge
retries: :class:`toolpath.judges.client.Judge`)."""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import weakref
from typing import Any

from toolpath.errors import ConfigError
from toolpath.judges.messages import EMPTY_REPLY, JudgeReply, JudgeRequest, TransientError

__all__ = ["GenAIBackend"]

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class GenAIBackend:
    """``google-genai``'s async client; the SDK's own retries are off, :class:`Judge` does them."""

    def __init__(self, client: Any = None) -> None:
        from google.genai import types

        self._types = types
        self._own = client is None
        self.client = self._make() if client is None else client
        # The SDK's async client belongs to the event loop it first ran on, and every Judge.run is a new loop
        # (online workers run one per batch, several at once): each loop gets a client of its own.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        self._first_taken = False
        self._clients_lock = threading.Lock()

    def _make(self) -> Any:
        from google import genai

        types = self._types
        try:
            return genai.Client(http_options=types.HttpOptions(retry_options=types.HttpRetryOptions(attempts=1)))
        except ValueError as exc:
            raise ConfigError(
                f"judge metrics need the Gemini API or Vertex AI: set GOOGLE_API_KEY (or GEMINI_API_KEY), or "
                f"GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION ({exc})"
            ) from None

    def _loop_client(self) -> Any:
        if not self._own:
            return self.client
        loop = asyncio.get_running_loop()
        with self._clients_lock:
            client = self._clients.get(loop)
            if client is None:
                client = self._make() if self._first_taken else self.client
                self._first_taken = True
                self._clients[loop] = client
        return client

    async def generate(self, request: JudgeRequest, timeout: float) -> JudgeReply:
        from google.genai import errors

        config = (
            self._given_config(request.config, timeout, request.max_output_tokens)
            if request.config is not None
            else self._config(request.temperature, request.json_output, timeout, request.max_output_tokens)
        )
        try:
            response = await asyncio.wait_for(
                self._loop_client().aio.models.generate_content(
                    model=request.model, contents=request.prompt, config=config
                ),
                timeout,
            )
        except TimeoutError:
            raise TransientError(f"no reply within {timeout:g} s", answered=True) from None
        except errors.APIError as exc:
            if exc.code in RETRY_STATUS:
                raise TransientError(f"{exc.code} {exc.status or ''}".strip(), _retry_after(exc)) from None
            return JudgeReply(None, f"judge model error {exc.code}: {exc.message or exc.status}")
        except Exception as exc:  # connection refused, reset, DNS: worth another try
            if _is_network_error(exc):
                raise TransientError(f"{type(exc).__name__}: {exc}") from None
            raise
        usage = response.usage_metadata
        return JudgeReply(
            response.text,
            None if response.text else EMPTY_REPLY,
            (usage.prompt_token_count or 0) if usage else 0,
            # the model's thinking is output too: billed as output, and within max_output_tokens
            ((usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)) if usage else 0,
        )

    @functools.lru_cache(maxsize=64)  # noqa: B019 - one backend per run; configs are few and immutable here
    def _config(self, temperature: float | None, json_output: bool, timeout: float, most: int | None) -> Any:
        return self._types.GenerateContentConfig(
            temperature=temperature,
            max_output_tokens=most,
            response_mime_type="application/json" if json_output else None,
            http_options=self._types.HttpOptions(timeout=int(timeout * 1000)),
        )

    @functools.lru_cache(maxsize=64)  # noqa: B019 - as _config
    def _given_config(self, config: str, timeout: float, most: int | None) -> Any:
        given = self._types.GenerateContentConfig.model_validate(json.loads(config))
        update: dict[str, Any] = {"http_options": self._types.HttpOptions(timeout=int(timeout * 1000))}
        if given.max_output_tokens is None and most is not None:  # the config's own limit stands
            update["max_output_tokens"] = most
        return given.model_copy(update=update)


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    headers: Any = getattr(response, "headers", None) or {}
    try:
        return float(headers.get("retry-after") or headers.get("Retry-After"))
    except (TypeError, ValueError):
        return None


def _is_network_error(exc: Exception) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"ConnectError", "ReadError", "RemoteProtocolError", "ClientConnectionError", "OSError"})
