"""OpenAI and any OpenAI-compatible server (vLLM, llama-server, `python -m llama_cpp.server`) via the official SDK."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from ..retry import with_retries
from .base import Reply, Request


@dataclass(frozen=True)
class OpenAIConfig:
    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    structured: str = "json_schema"  # or "json_object" for servers without json_schema
    attempts: int = 4
    timeout_s: float = 120.0


class OpenAIBackend:
    name = "openai"

    def __init__(self, config: OpenAIConfig):
        import openai

        self.config = config
        # The key is read from the environment and handed to the SDK only; it is never recorded.
        self.client = openai.OpenAI(
            base_url=config.base_url,
            api_key=os.environ.get(config.api_key_env) or "not-needed-for-local-servers",
            max_retries=0,
            timeout=config.timeout_s,
        )
        self._create = with_retries(self.client.chat.completions.create, attempts=config.attempts)

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.config.model, "base_url": self.config.base_url}

    def effective(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.config.model, "base_url": self.config.base_url,
                "structured": self.config.structured}

    def complete(self, request: Request) -> Reply:
        g = request.generation
        kwargs: dict[str, Any] = {}
        if request.schema:
            schema = json.loads(request.schema)
            if self.config.structured == "json_schema":
                kwargs["response_format"] = {"type": "json_schema",
                                             "json_schema": {"name": "verdict", "schema": schema, "strict": True}}
            else:
                kwargs["response_format"] = {"type": "json_object", "schema": schema}
        if g.stop:
            kwargs["stop"] = list(g.stop)
        t0 = time.perf_counter()
        out = self._create(
            model=self.config.model,
            messages=[{"role": r, "content": c} for r, c in request.messages],
            temperature=g.temperature,
            top_p=g.top_p,
            max_tokens=g.max_tokens,
            seed=g.seed,
            **kwargs,
        )
        latency = time.perf_counter() - t0
        choice = out.choices[0]
        usage = out.usage
        details = getattr(usage, "prompt_tokens_details", None) if usage else None
        return Reply(
            text=choice.message.content or "",
            finish_reason=choice.finish_reason or "unknown",
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cached_tokens=int(getattr(details, "cached_tokens", 0) or 0) if details else 0,
            latency_s=round(latency, 4),
            raw={"id": out.id, "model": out.model, "finish_reason": choice.finish_reason},
        )

    def close(self) -> None:
        self.client.close()
