"""Anthropic Messages API through the official SDK; structured output by a forced tool call.

A reply without a tool_use block is returned as plain text: the verdict parser then treats it
as unparsed, never as a score (llama-server answers forced tool calls with text).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from ..retry import with_retries
from .base import Reply, Request


@dataclass(frozen=True)
class AnthropicConfig:
    model: str
    base_url: str | None = None
    api_key_env: str = "ANTHROPIC_API_KEY"
    attempts: int = 4
    timeout_s: float = 120.0


class AnthropicBackend:
    name = "anthropic"

    def __init__(self, config: AnthropicConfig):
        import anthropic

        self.config = config
        self.client = anthropic.Anthropic(
            base_url=config.base_url,
            api_key=os.environ.get(config.api_key_env) or "not-needed-for-local-servers",
            max_retries=0,
            timeout=config.timeout_s,
        )
        self._create = with_retries(self.client.messages.create, attempts=config.attempts)

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.config.model, "base_url": self.config.base_url}

    def effective(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.config.model, "base_url": self.config.base_url}

    def complete(self, request: Request) -> Reply:
        g = request.generation
        system = "\n\n".join(c for r, c in request.messages if r == "system")
        messages = [{"role": r, "content": c} for r, c in request.messages if r != "system"]
        kwargs: dict[str, Any] = {}
        if system:
            kwargs["system"] = system
        if request.schema:
            kwargs["tools"] = [{"name": "verdict", "description": "Record the verdict.",
                                "input_schema": json.loads(request.schema)}]
            kwargs["tool_choice"] = {"type": "tool", "name": "verdict"}
        if g.stop:
            kwargs["stop_sequences"] = list(g.stop)
        t0 = time.perf_counter()
        out = self._create(model=self.config.model, messages=messages, max_tokens=g.max_tokens,
                           temperature=g.temperature, **kwargs)
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
            finish_reason={"max_tokens": "length"}.get(out.stop_reason or "", out.stop_reason or "unknown"),
            prompt_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "output_tokens", 0) or 0),
            cached_tokens=int(getattr(usage, "cache_read_input_tokens", 0) or 0),
            latency_s=round(latency, 4),
            raw={"id": out.id, "model": out.model, "stop_reason": out.stop_reason,
                 "tool_use": any(b.type == "tool_use" for b in out.content)},
        )

    def close(self) -> None:
        self.client.close()
