"""Anthropic Messages API through the official SDK; structured output by a forced tool call.

A reply without a tool_use block is returned as plain text: the verdict parser then treats it
as unparsed, never as a score (llama-server answers forced tool calls with text).

Sampling: the SDK 2.x sends API version 2026-10-21, which rejects temperature, top_p and top_k
at any value, and has dropped them from `messages.create`. So nothing is sent unless the model
is registered with `sampling_params = true` (a compatible server such as llama-server), and then
through `extra_body`; `sent` reports exactly that, so an arm whose registered sampling the
server would not honour is refused before its first question. The API has no seed at all.
Auth: the SDK 2.x sends `Authorization: Bearer`; servers that check only the documented
`x-api-key` header answered 401, so both are sent. Extended thinking needs a token budget and
temperature 1, which this backend does not register: thinking on is refused.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from ..errors import CheckFailed
from ..retry import with_retries
from .base import Generation, Reply, Request


@dataclass(frozen=True)
class AnthropicConfig:
    model: str
    base_url: str | None = None
    api_key_env: str = "ANTHROPIC_API_KEY"
    sampling_params: bool = False  # the server accepts temperature/top_p (llama-server; not API 2026-10-21)
    attempts: int = 4
    timeout_s: float = 120.0


class AnthropicBackend:
    name = "anthropic"

    def __init__(self, config: AnthropicConfig):
        import anthropic

        self.config = config
        key = os.environ.get(config.api_key_env) or "not-needed-for-local-servers"
        self.client = anthropic.Anthropic(base_url=config.base_url, api_key=key, default_headers={"x-api-key": key},
                                          max_retries=0, timeout=config.timeout_s)
        self._create = with_retries(self.client.messages.create, attempts=config.attempts)

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.config.model, "base_url": self.config.base_url,
                "sampling_params": self.config.sampling_params}

    def effective(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.config.model, "base_url": self.config.base_url,
                "sampling_params": self.config.sampling_params, "thinking_switch": False}

    def sent(self, generation: Generation) -> dict[str, Any]:
        g = generation
        sampling = self.config.sampling_params
        return {"temperature": g.temperature if sampling else None, "top_p": g.top_p if sampling else None,
                "max_tokens": g.max_tokens, "seed": g.seed if g.temperature == 0 else None,  # greedy ignores it; else no seed can be sent
                "stop": list(g.stop), "system": g.system, "thinking": False if not g.thinking else None}

    def complete(self, request: Request) -> Reply:
        g = request.generation
        if g.thinking:
            raise CheckFailed("thinking mode on the anthropic backend needs a registered budget and temperature 1: "
                              "not built; register thinking = false")
        system = "\n\n".join(c for r, c in request.messages if r == "system")
        messages = [{"role": r, "content": c} for r, c in request.messages if r != "system"]
        kwargs: dict[str, Any] = {}
        if system:
            # a cache breakpoint after the shared prefix (tools + system): identical prefixes are billed once
            # by the API when long enough; cached tokens come back as cache_read_input_tokens
            kwargs["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        if request.schema:
            kwargs["tools"] = [{"name": "verdict", "description": "Record the verdict.",
                                "input_schema": json.loads(request.schema)}]
            kwargs["tool_choice"] = {"type": "tool", "name": "verdict"}
        if g.stop:
            kwargs["stop_sequences"] = list(g.stop)
        if self.config.sampling_params:
            sampling = {"temperature": g.temperature, **({"top_p": g.top_p} if g.top_p != 1.0 else {})}
            kwargs["extra_body"] = {k: v for k, v in sampling.items() if v is not None}
        t0 = time.perf_counter()
        out = self._create(model=self.config.model, messages=messages, max_tokens=g.max_tokens, **kwargs)
        latency = time.perf_counter() - t0
        text = ""
        for block in out.content:
            if block.type == "tool_use":
                text = json.dumps(block.input)
                break
        else:
            text = "".join(getattr(b, "text", "") for b in out.content)
        usage = out.usage
        return Reply(
            text=text,
            finish_reason={"max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop"}.get(
                out.stop_reason or "", out.stop_reason or "unknown"),
            prompt_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "output_tokens", 0) or 0),
            cached_tokens=int(getattr(usage, "cache_read_input_tokens", 0) or 0),
            latency_s=round(latency, 4),
            raw={"id": out.id, "model": out.model, "stop_reason": out.stop_reason,
                 "tool_use": any(b.type == "tool_use" for b in out.content)},
        )

    def close(self) -> None:
        self.client.close()
