"""The GenAI SDK's ``agentplatform.Client`` pointed at a toolpath collector, and ``evaluateInstances`` posted as
raw JSON: what the Vertex tests of both request forms share."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from tests.helpers.collector import TOKEN, Collector


def new_client(collector: Collector, token: str = TOKEN, **http_options: Any) -> Any:
    """``agentplatform.Client`` as its users make it, with toolpath's address as its ``base_url``."""
    import agentplatform
    from google.oauth2.credentials import Credentials

    return agentplatform.Client(
        project="my-project", location="us-central1", credentials=Credentials(token=token),
        http_options={"base_url": f"{collector.url}/", **http_options},
    )  # fmt: skip


def post(collector: Collector, body: Any) -> tuple[int, Any]:
    """``body`` (JSON text as written, or a value to encode) posted to ``evaluateInstances``: the status and the
    JSON reply."""
    data = body if isinstance(body, str) else json.dumps(body)
    request = urllib.request.Request(
        f"{collector.url}/v1beta1/projects/my-project/locations/us-central1:evaluateInstances", data=data.encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
