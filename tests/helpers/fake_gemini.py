"""A small fake of the Gemini API's ``generateContent`` on 127.0.0.1, for the real ``google-genai`` client.

The test gives a ``script(prompt, seen) -> Reply`` (``seen``: how many times this exact prompt came before), so
replies can be good, malformed, slow, or errors such as 429, and change between samples of one prompt.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str = ""
    status: int = 200
    delay: float = 0.0
    retry_after: float | None = None
    raw: str | None = None
    """A body sent as it is, as text/html (a proxy's error page), instead of the API's JSON."""
    thoughts: int = 0
    """Tokens the model spent thinking before the answer (its ``thoughtsTokenCount``; a word is a token here)."""


Script = Callable[[str, int], Reply]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many concurrent clients connect at once


class FakeGemini:
    def __init__(self, script: Script, port: int = 0) -> None:
        self.script = script
        self.prompts: list[str] = []
        self.models: list[str] = []
        self.bodies: list[dict] = []
        """Every request's JSON body, in arrival order."""
        self.statuses: Counter[int] = Counter()
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.server = _Server(("127.0.0.1", port), self._handler())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def requests(self) -> int:
        return len(self.prompts)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                prompt = "".join(p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", []))
                model = self.path.split("/models/", 1)[-1].split(":", 1)[0]
                with fake._lock:
                    seen = fake._seen[prompt]
                    fake._seen[prompt] += 1
                    fake.prompts.append(prompt)
                    fake.models.append(model)
                    fake.bodies.append(body)
                reply = fake.script(prompt, seen)
                with fake._lock:
                    fake.statuses[reply.status] += 1
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status == 200:
                    text, finish, thoughts = reply.text, "STOP", reply.thoughts
                    most = (body.get("generationConfig") or {}).get("maxOutputTokens")
                    if most is not None and len(text.split()) + thoughts > most:  # as the model: thinking, then
                        thoughts = min(thoughts, most)  # the answer, within max_output_tokens: cut short
                        text, finish = " ".join(text.split()[: most - thoughts]), "MAX_TOKENS"
                    payload = {
                        "candidates": [
                            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish}
                        ],
                        "usageMetadata": {
                            "promptTokenCount": len(prompt.split()),
                            "candidatesTokenCount": len(text.split()),
                            "totalTokenCount": len(prompt.split()) + len(text.split()) + thoughts,
                            **({"thoughtsTokenCount": thoughts} if thoughts else {}),
                        },
                        "modelVersion": model,
                    }
                else:
                    payload = {"error": {"code": reply.status, "message": "scripted error", "status": "UNAVAILABLE"}}
                data = json.dumps(payload).encode() if reply.raw is None else reply.raw.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json" if reply.raw is None else "text/html")
                    self.send_header("Content-Length", str(len(data)))
                    if reply.retry_after is not None:
                        self.send_header("Retry-After", str(reply.retry_after))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a timeout test)
                    pass

            def log_message(self, format: str, *args: object) -> None:
                return

        return Handler

    @contextmanager
    def running(self) -> Iterator[FakeGemini]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()


def json_reply(**values: object) -> Reply:
    return Reply(json.dumps(values))


@contextmanager
def serving_gemini(monkeypatch: Any, script: Callable[..., Reply]) -> Iterator[FakeGemini]:
    """A :class:`FakeGemini` answering ``script`` on loopback, found by the google-genai SDK through the environment
    only (an API key, the base URL; no Vertex AI or project settings left from the machine)."""
    server = FakeGemini(script)
    with server.running():
        monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
        for var in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        yield server
