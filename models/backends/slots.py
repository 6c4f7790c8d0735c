"""Sampling read back from llama-server, which reports each slot's last request at `GET /slots`.

Neither a Chat Completions nor a Messages reply echoes a sampling setting, so a server that ignores one
cannot be caught from its replies. llama-server (behind either route) can: after a one-token probe with
the registered settings, the slot that ran it shows the temperature, top_p and seed it really used. A
server without that route (the OpenAI and Anthropic APIs) is not probed, and reads back "not verifiable".
"""
from __future__ import annotations

import json
import urllib.request
from typing import Any, Callable

from .base import NOT_VERIFIABLE, READ_BACK, nothing_read_back

PROBE = (("user", "Say hello."),)  # the probe's messages; it asks for one token


def slots(base_url: str) -> list[dict] | None:
    """The server's `GET /slots` (beside /v1), or None from a server without it."""
    url = base_url.rstrip("/").removesuffix("/v1") + "/slots"
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.loads(r.read())
    except (OSError, ValueError):  # urllib's HTTP and connection errors are OSErrors
        return None
    return body if isinstance(body, list) and all(isinstance(s, dict) for s in body) else None


def read_back(base_url: str, probe: Callable[[], Any]) -> dict[str, Any]:
    """The sampling the server says its latest request used, after `probe` sent one with the registered settings."""
    if slots(base_url) is None:
        return nothing_read_back()
    try:
        probe()
    except Exception:  # a probe the server does not answer reads back nothing; the calls will record why
        return nothing_read_back()
    ran = [s for s in slots(base_url) or [] if isinstance(s.get("params"), dict)]
    if not ran:
        return nothing_read_back()
    params = max(ran, key=lambda s: s.get("id_task", -1))["params"]
    return {k: _number(params[k]) if k in params else NOT_VERIFIABLE for k in READ_BACK}


def _number(value: Any) -> Any:
    """llama-server keeps sampling settings as float32 (0.7 reads 0.699999988): rounded back to 6 places."""
    return round(value, 6) if isinstance(value, float) else value
