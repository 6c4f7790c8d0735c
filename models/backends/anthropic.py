"""Anthropic Messages API through the official SDK; structured output by a forced tool call.

A reply without a tool_use block is returned as plain text: the verdict parser then treats it
as unparsed, never as a score (llama-server answers forced tool calls with text).

Sampling: the SDK 2.x sends API version 2026-10-21, which rejects temperature, top_p and top_k
at any value, and has dropped them from `messages.create`. So nothing is sent unless the model
is registered with `sampling_params = true` (a compatible server such as llama-server), and then
through `extra_body`; `sent` reports exactly that, so an arm whose registered sampling the
server would not honour is refused before its first question. The API has no seed at all.
Auth: the SDK 2.x sends `Authorization: Bearer`; servers that check only the documented
`x-api-key` header answered 401, so both are sent.
Thinking: always sent explicitly, `{"type": "enabled", "budget_tokens": registered budget}` or
`{"type": "disabled"}`, so a model's own default (adaptive thinking on newer models) never decides.
The API refuses a forced tool call while thinking, so a structured request then offers the tool
with `tool_choice: auto`, and a reply without it is parsed as text. `effort` goes out as
`output_config.effort`. Before the first call the model's capabilities are read back from
`GET /v1/models/{id}` (which thinking types it supports); a server that does not answer that
route is recorded as such. A reply shows thinking when it has a thinking block or thinking tokens.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from core.errors import CheckFailed
from core.text import lone_surrogate

from ..deadline import bounded_client, deadline
from ..retry import (
    BatchFailed,
    MalformedReply,
    answer_text,
    decoded,
    field,
    optional_text,
    reply_body,
    reply_name,
    token_count,
    with_retries,
)
from . import slots
from .base import NOT_VERIFIABLE, SENDS, BackendInfo, Generation, ListedBatch, Reply, Request, nothing_read_back


@dataclass(frozen=True)
class AnthropicConfig:
    model: str
    base_url: str | None = None
    api_key_env: str = "ANTHROPIC_API_KEY"
    sampling_params: bool = False  # the server accepts temperature/top_p (llama-server; not API 2026-10-21)
    attempts: int = 4
    timeout_s: float = 120.0  # each wait for data
    deadline_s: float = 600.0  # each attempt as a whole (models.deadline)


class AnthropicBackend:
    name = "anthropic"

    def __init__(self, config: AnthropicConfig):
        import anthropic

        self.config = config
        key = os.environ.get(config.api_key_env) or "not-needed-for-local-servers"
        self.client = anthropic.Anthropic(base_url=config.base_url, api_key=key, default_headers={"x-api-key": key},
                                          max_retries=0, timeout=config.timeout_s,
                                          http_client=bounded_client(anthropic.DefaultHttpxClient()))
        self._create = with_retries(decoded(self._attempt), attempts=config.attempts)

    def _attempt(self, **kwargs: Any) -> Any:
        with deadline(self.config.deadline_s):
            return self.client.messages.create(**kwargs)

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.config.model, "base_url": self.config.base_url,
                "sampling_params": self.config.sampling_params}

    def effective(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.config.model, "base_url": self.config.base_url,
                "sampling_params": self.config.sampling_params, "thinking_switch": True,
                "thinking_types": self._thinking_types()}

    def _thinking_types(self) -> list[str] | str:
        """The thinking modes the API says this model supports, or why it could not say."""
        try:
            with deadline(self.config.deadline_s):
                info = self.client.models.retrieve(self.config.model)
        except Exception as e:  # llama-server and older gateways have no /v1/models/{id}
            return f"not reported: {type(e).__name__}"
        thinking = getattr(getattr(info, "capabilities", None), "thinking", None)
        if thinking is None:
            return "not reported: no capabilities"
        types = getattr(thinking, "types", None)
        if not thinking.supported:
            return ["disabled"]
        return sorted(k for k in ("adaptive", "between_tools", "disabled", "enabled")
                      if getattr(getattr(types, k, None), "supported", False))

    def sent(self, generation: Generation) -> dict[str, Any]:
        g = generation
        sampling = self.config.sampling_params
        return {"temperature": g.temperature if sampling else None, "top_p": g.top_p if sampling else None,
                "max_tokens": g.max_tokens,
                "seed": g.seed if g.temperature == 0 else None,  # greedy ignores it; else no seed can be sent
                "stop": list(g.stop), "system": g.system, "thinking": g.thinking,
                "thinking_budget": g.thinking_budget if g.thinking else None, "effort": g.effort}

    def read_back(self, generation: Generation) -> dict[str, Any]:
        """The sampling the server says it used (models.backends.slots): a compatible llama-server can say, the API
        cannot. A thinking request needs a budget of at least 1024 tokens, too dear for a probe: not verifiable."""
        if self.config.base_url is None or generation.thinking:
            return nothing_read_back()
        messages = [{"role": r, "content": c} for r, c in slots.PROBE]
        used = slots.read_back(self.config.base_url, lambda: self._attempt(
            model=self.config.model, messages=messages, max_tokens=1, **self._kwargs(Request(slots.PROBE, generation))))
        return {**used, "seed": NOT_VERIFIABLE}  # never sent (`sent` counts it only where greedy decoding ignores it)

    def _kwargs(self, request: Request) -> dict[str, Any]:
        """What a request sends beyond the model, the user/assistant messages and max_tokens."""
        g = request.generation
        system = "\n\n".join(c for r, c in request.messages if r == "system")
        kwargs: dict[str, Any] = {}
        if system:
            # a cache breakpoint after the shared prefix (tools + system): identical prefixes are billed once
            # by the API when long enough; cached tokens come back as cache_read_input_tokens
            kwargs["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        if request.schema:
            kwargs["tools"] = [{"name": "verdict", "description": "Record the verdict.",
                                "input_schema": json.loads(request.schema)}]
            kwargs["tool_choice"] = {"type": "auto"} if g.thinking else {"type": "tool", "name": "verdict"}
        if g.stop:
            kwargs["stop_sequences"] = list(g.stop)
        if self.config.sampling_params:
            # top_p is sent at 1.0 too: left out, llama-server applied its own 0.95 (caught by the read-back)
            sampling = {"temperature": g.temperature, "top_p": g.top_p}
            kwargs["extra_body"] = {k: v for k, v in sampling.items() if v is not None}
        if g.effort:
            kwargs["output_config"] = {"effort": g.effort}
        kwargs["thinking"] = ({"type": "enabled", "budget_tokens": g.thinking_budget} if g.thinking
                              else {"type": "disabled"})
        return kwargs

    def _body(self, request: Request) -> dict[str, Any]:
        """The request's keyword arguments to `messages.create`."""
        g = request.generation
        if g.thinking and not g.thinking_budget:
            raise CheckFailed("thinking mode on the anthropic backend needs a registered thinking_budget")
        return dict(model=self.config.model, messages=[{"role": r, "content": c} for r, c in request.messages
                                                       if r != "system"],
                    max_tokens=g.max_tokens, **self._kwargs(request))

    def complete(self, request: Request) -> Reply:
        body = self._body(request)
        t0 = time.perf_counter()
        out = self._create(**body)
        return self._reply(out, time.perf_counter() - t0, {})

    def _reply(self, out: Any, latency: float, where: dict[str, Any]) -> Reply:
        """The reply as a Reply, or MalformedReply (an `error` row) when it holds no answer: not a message with a
        content list, no text block (`content: []`, thinking only) or only whitespace, `stop_reason: "refusal"`,
        text or tool input that is not Unicode, or a field of the wrong type (a token count that is no count)."""
        body = lambda: reply_body(out)  # noqa: E731
        # the SDK does not validate: a body that is not a message with a content list gets here
        content = field(out, "content")
        if field(out, "type") != "message" or not isinstance(content, list):
            raise MalformedReply("the reply is not a message with a content list", body=body())
        kinds = [field(b, "type") for b in content]
        stop = field(out, "stop_reason")
        if stop is not None and not isinstance(stop, str):
            raise MalformedReply(f"stop_reason is not a string: {type(stop).__name__}", body=body())
        texts = [optional_text(field(b, "text"), f"content[{i}].text", body) for i, b in enumerate(content)
                 if kinds[i] == "text"]
        refusal = ("the model declined (stop_reason refusal)" + (f": {''.join(texts)}" if any(texts) else "")
                   if stop == "refusal" else None)
        tool = next((b for b, k in zip(content, kinds, strict=True) if k == "tool_use"), None)
        if tool is not None and not refusal:
            tool_input = field(tool, "input")
            if not isinstance(tool_input, dict) or lone_surrogate(tool_input) is not None:
                raise MalformedReply("the tool_use block's input is not an object of Unicode text", body=body())
            text = json.dumps(tool_input)
        elif not texts and not refusal:
            what = "content is []" if not content else f"no text block (only {', '.join(map(str, kinds))})"
            raise MalformedReply(f"no answer: {what}", body=body(), kind="empty")
        else:
            text = answer_text("".join(texts), "the text blocks", body, refusal=refusal)
        usage = field(out, "usage")
        thinking_tokens = token_count(field(field(usage, "output_tokens_details"), "thinking_tokens"),
                                      "usage.output_tokens_details.thinking_tokens", body)
        thought = any(k in ("thinking", "redacted_thinking") for k in kinds)
        return Reply(
            text=text,
            finish_reason={"max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop"}.get(
                stop or "", stop or "unknown"),
            prompt_tokens=token_count(field(usage, "input_tokens"), "usage.input_tokens", body),
            completion_tokens=token_count(field(usage, "output_tokens"), "usage.output_tokens", body),
            cached_tokens=token_count(field(usage, "cache_read_input_tokens"), "usage.cache_read_input_tokens", body),
            latency_s=round(latency, 4),
            raw={"id": reply_name(field(out, "id")), "model": reply_name(field(out, "model")), "stop_reason": stop,
                 **where, "tool_use": tool is not None, "thinking_tokens": thinking_tokens},
            thinking=thought or thinking_tokens > 0,
        )

    # Message Batches (models.provider_batch): `messages.batches.create` with one {"custom_id", "params"} per request;
    # once the batch has ended, `messages.batches.results` streams one succeeded/errored/canceled/expired result each.

    batch_limits = (100_000, 256 * 1024 * 1024)  # Message Batches: requests, and bytes of the request body
    # a message batch takes no metadata: models.provider_batch finds one by its time, size and custom_ids
    batch_tags = False

    def batch_item(self, key: str, request: Request) -> dict[str, Any]:
        """One request of the batch (custom_id = call key)."""
        params = self._body(request)
        params.update(params.pop("extra_body", {}))  # what the SDK would merge into the JSON body
        return {"custom_id": key, "params": params}

    def submit_batch(self, requests: dict[str, Request], tag: str) -> str:
        """Start one batch (custom_id = call key; the API keeps no tag); its id. Not retried: a retry after a lost
        answer could start, and pay for, a second batch (models.provider_batch finds it in the provider's list
        instead)."""
        items = [self.batch_item(key, request) for key, request in requests.items()]
        return self.client.messages.batches.create(requests=items).id

    def listed_batches(self, since: float) -> list[ListedBatch]:
        """The workspace's message batches created at or after `since`, newest first (as the API lists them)."""
        out = []
        for b in with_retries(self.client.messages.batches.list, attempts=self.config.attempts)(limit=100):
            created = b.created_at.timestamp()
            if created < since:
                break
            c = b.request_counts
            out.append(ListedBatch(b.id, created, c.processing + c.succeeded + c.errored + c.canceled + c.expired,
                                   None))
        return out

    def batch_custom_ids(self, batch_id: str) -> set[str]:
        results = with_retries(self.client.messages.batches.results, attempts=self.config.attempts)(batch_id)
        return {item.custom_id for item in results}

    def batch_status(self, batch_id: str) -> tuple[bool, str]:
        """(ended, the provider's processing status)."""
        batch = with_retries(self.client.messages.batches.retrieve, attempts=self.config.attempts)(batch_id)
        return batch.processing_status == "ended", batch.processing_status

    def batch_results(self, batch_id: str, keys: list[str]) -> dict[str, Reply | BatchFailed | None]:
        """Each key's reply or failure; None for a request the batch never ran (expired or canceled first)."""
        out: dict[str, Reply | BatchFailed | None] = {}
        results = with_retries(self.client.messages.batches.results, attempts=self.config.attempts)(batch_id)
        for item in results:
            result = item.result
            if result.type == "succeeded":
                try:
                    out[item.custom_id] = self._reply(result.message, 0.0, {"batch": batch_id})
                except MalformedReply as e:
                    out[item.custom_id] = BatchFailed(f"batch {batch_id}: unreadable result: {e}")
            elif result.type == "errored":
                error = result.error.error
                out[item.custom_id] = BatchFailed(f"batch {batch_id}: {error.type}: {error.message}")
            else:
                out[item.custom_id] = None
        return {k: out.get(k) for k in keys}

    def close(self) -> None:
        self.client.close()


def open_anthropic(spec, quant: str | None, adapters: tuple, exp_dir, runtime) -> AnthropicBackend:
    return AnthropicBackend(AnthropicConfig(model=spec.source, base_url=spec.base_url, attempts=spec.attempts,
                                            timeout_s=spec.timeout_s, deadline_s=spec.deadline_s,
                                            sampling_params=spec.sampling_params,
                                            api_key_env=spec.api_key_env or "ANTHROPIC_API_KEY"))


def check_generation(model, g: Generation) -> list[tuple[str, str]]:
    """Thinking on needs a budget the API accepts."""
    if g.thinking and g.thinking_budget is None:
        return [("thinking_budget", "thinking on the anthropic backend needs a registered thinking_budget "
                 "(tokens, at least 1024)")]
    if g.thinking and not 1024 <= g.thinking_budget < g.max_tokens:
        return [("thinking_budget", f"thinking_budget must be at least 1024 and below max_tokens ({g.max_tokens})")]
    return []


# The API takes no temperature, top_p or seed; a compatible server registered with sampling_params takes
# temperature and top_p, and `sent` says so per model.
def expected_identity(spec, adapters: tuple, runtime, eff: dict[str, Any]) -> dict[str, Any]:
    """identity() as the registration gives it: what verify re-derives a call key from without a server."""
    return {"backend": AnthropicBackend.name, "model": spec.source, "base_url": spec.base_url,
            "sampling_params": spec.sampling_params}


INFO = BackendInfo(name=AnthropicBackend.name, open=open_anthropic, expected_identity=expected_identity,
                   sends=frozenset((*(k for k in SENDS if k not in ("temperature", "top_p", "seed")),
                                    "thinking_budget", "effort")),
                   model_keys=("sampling_params", "provider_batch", "batch_poll_s", "batch_max_requests",
                               "batch_max_bytes", "deadline_s"),
                   check_generation=check_generation)
