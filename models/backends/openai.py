"""OpenAI and any OpenAI-compatible server (vLLM, llama-server, `python -m llama_cpp.server`) via the official SDK.

One model served by several servers is load-balanced: each attempt goes to the server with the
fewest requests in flight (ties in turn), skipping for a few seconds a server whose last attempt
failed, so a retry lands elsewhere. Thinking is switched as the model is registered
(`thinking_control`): `chat_template_kwargs.enable_thinking` for servers that render the chat
template with request kwargs (vLLM, llama-server), or `reasoning_effort` ("none" for off, the
registered effort for on) for OpenAI's reasoning models. A reply shows thinking when it carries
`reasoning_content` or reasoning tokens; the runner refuses a model that thinks when registered off.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator

from core.errors import CheckFailed, Refused
from core.jsonl import json_lines

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
    retryable,
    token_count,
    with_retries,
)
from . import slots
from .base import (
    READ_BACK,
    SENDS,
    STRUCTURED,
    BackendInfo,
    Generation,
    ListedBatch,
    Reply,
    Request,
    nothing_read_back,
)

COOLDOWN_S = 5.0
# A server's answer that it cannot take the structured-output mode at all, whatever its status code
# (`python -m llama_cpp.server` answers json_schema with HTTP 500 and a pydantic validation message):
# the body names the mode and says the request is invalid. Every verdict would be refused the same way.
_MODE = re.compile(r"(?i)response_format|json_schema|json_object")
_INVALID = re.compile(r"(?i)validat|input should be|not supported|unsupported|not permitted|literal_error|"
                      r"extra inputs|invalid|unknown|unrecognized")


def refusal(exc: BaseException) -> str | None:
    """The server's message when `exc` is an HTTP error refusing the structured-output mode, else None."""
    if getattr(exc, "status_code", None) is None:
        return None
    response = getattr(exc, "response", None)
    try:
        body = response.text if response is not None else ""
    except Exception:  # a body that cannot be read is not a refusal we can name
        body = ""
    if not (_MODE.search(f"{exc} {body}") and _INVALID.search(f"{exc} {body}")):
        return None
    try:  # the OpenAI error format's message, without the JSON around it
        said = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        said = body or str(exc)
    return " ".join(str(said).split())[:400]


@dataclass(frozen=True)
class OpenAIConfig:
    model: str
    base_urls: tuple[str, ...] = ()  # empty: the SDK's default (api.openai.com)
    api_key_env: str = "OPENAI_API_KEY"
    structured: str = "json_schema"  # one of STRUCTURED: "json_object" sends the schema inside it, "none" nothing
    thinking_control: str = "none"  # "chat_template_kwargs" | "reasoning_effort" | "none" (registration.spec)
    attempts: int = 4
    timeout_s: float = 120.0  # each wait for data
    deadline_s: float = 600.0  # each attempt as a whole (models.deadline)


class Pool:
    """Least-outstanding-requests choice among servers; a server that just failed is skipped for a while."""

    def __init__(self, n: int):
        self.outstanding = [0] * n
        self.down_until = [0.0] * n
        self._next = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lease(self) -> Iterator[int]:
        with self._lock:
            n = len(self.outstanding)
            order = [(self._next + k) % n for k in range(n)]
            now = time.monotonic()
            up = [i for i in order if self.down_until[i] <= now] or order
            i = min(up, key=lambda j: self.outstanding[j])  # min keeps the first of equals: round-robin
            self.outstanding[i] += 1
            self._next = (i + 1) % n
        failed = False
        try:
            yield i
        except Exception as e:
            failed = retryable(e)  # a 400 is the request's fault, not the server's
            raise
        finally:
            with self._lock:
                self.outstanding[i] -= 1
                if failed:
                    self.down_until[i] = time.monotonic() + COOLDOWN_S


class OpenAIBackend:
    name = "openai"

    def __init__(self, config: OpenAIConfig):
        import openai

        self.config = config
        # The key is read from the environment and handed to the SDK only; it is never recorded.
        key = os.environ.get(config.api_key_env) or "not-needed-for-local-servers"
        self.clients = [openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=config.timeout_s,
                                      http_client=bounded_client(openai.DefaultHttpxClient()))
                        for url in (config.base_urls or (None,))]
        self.pool = Pool(len(self.clients))
        self._create = with_retries(self._attempt, attempts=config.attempts)

    def _attempt(self, **kwargs: Any) -> tuple[Any, int]:
        with self.pool.lease() as i, deadline(self.config.deadline_s):
            try:
                return decoded(self.clients[i].chat.completions.create)(**kwargs), i
            except Exception as e:
                said = refusal(e) if "response_format" in kwargs else None
                if said is None:
                    raise
                url = (self.config.base_urls or ("the OpenAI API",))[i]
                others = " or ".join(f'"{m}"' for m in STRUCTURED if m != self.config.structured)
                raise Refused(
                    f"model {self.config.model!r} at {url} refuses the registered structured = "
                    f"{self.config.structured!r} (HTTP {e.status_code}): {said} -- stopped at the first refusal, "
                    f"not retried, since every verdict would be refused the same way. Register structured = {others} "
                    "in the model's [models.*] table (audit: --openai-structured): json_object sends the schema "
                    "inside a json_object response_format, none sends no response_format and the strict parser "
                    "decides") from None

    def identity(self) -> dict[str, Any]:
        """Part of every call key. The structured mode changes what a verdict request sends, so it is in it,
        except at its default, where the keys of calls made before it was registrable still match."""
        mode = {"structured": self.config.structured} if self.config.structured != "json_schema" else {}
        return {"backend": self.name, "model": self.config.model, "base_urls": sorted(self.config.base_urls), **mode}

    def effective(self) -> dict[str, Any]:
        """Which models each server says it serves (read back over HTTP; an unreachable server is noted)."""
        served: dict[str, Any] = {}
        for url, client in zip(self.config.base_urls or ("default",), self.clients, strict=False):
            try:
                with deadline(self.config.deadline_s):
                    served[url] = sorted(m.id for m in client.models.list())
            except Exception as e:  # recorded; the calls themselves will fail into error rows
                served[url] = f"unreachable: {type(e).__name__}"
        return {"backend": self.name, "model": self.config.model, "base_urls": list(self.config.base_urls),
                "served_models": served, "structured": self.config.structured,
                "thinking_switch": self.config.thinking_control != "none",
                "thinking_control": self.config.thinking_control}

    def sent(self, generation: Generation) -> dict[str, Any]:
        g = generation
        switchable = self.config.thinking_control != "none"
        return {"temperature": g.temperature, "top_p": g.top_p, "max_tokens": g.max_tokens, "seed": g.seed,
                "stop": list(g.stop), "system": g.system, "thinking": g.thinking if switchable else None,
                "thinking_budget": None, "effort": g.effort if g.thinking and switchable else None}

    def read_back(self, generation: Generation) -> dict[str, Any]:
        """The sampling each server says it used (models.backends.slots): llama-server can say, others cannot."""
        if not self.config.base_urls or (generation.thinking and self.config.thinking_control == "none"):
            return nothing_read_back()  # the OpenAI API; or thinking that cannot be sent, which verification refuses
        found = [slots.read_back(str(client.base_url), lambda i=i: self._probe(i, generation))
                 for i, client in enumerate(self.clients)]
        if all(f == found[0] for f in found):
            return found[0]
        urls = self.config.base_urls  # the servers disagree: each value shown per URL
        return {k: {url: f[k] for url, f in zip(urls, found, strict=True)} for k in READ_BACK}

    def _probe(self, i: int, generation: Generation) -> None:
        with deadline(self.config.deadline_s):
            self.clients[i].chat.completions.create(model=self.config.model, max_tokens=1,
                                                    messages=[{"role": r, "content": c} for r, c in slots.PROBE],
                                                    **self._kwargs(Request(slots.PROBE, generation)))

    def _kwargs(self, request: Request) -> dict[str, Any]:
        """What a request sends beyond the model, messages and max_tokens."""
        g = request.generation
        kwargs: dict[str, Any] = {}
        if request.schema and self.config.structured != "none":
            schema = json.loads(request.schema)
            if self.config.structured == "json_schema":
                kwargs["response_format"] = {"type": "json_schema",
                                             "json_schema": {"name": "verdict", "schema": schema, "strict": True}}
            else:
                kwargs["response_format"] = {"type": "json_object", "schema": schema}
        if g.stop:
            kwargs["stop"] = list(g.stop)
        for key in ("temperature", "top_p", "seed"):  # "provider-default" (None): not sent at all
            if getattr(g, key) is not None:
                kwargs[key] = getattr(g, key)
        control = self.config.thinking_control
        if control == "chat_template_kwargs":
            kwargs["extra_body"] = {"chat_template_kwargs": {"enable_thinking": g.thinking}}
            if g.thinking and g.effort:
                kwargs["reasoning_effort"] = g.effort
        elif control == "reasoning_effort":
            kwargs["reasoning_effort"] = g.effort if g.thinking else "none"
        elif g.thinking:
            raise CheckFailed(f"thinking mode is registered on for {self.config.model}, but the model has no "
                              "registered thinking_control, so it cannot be switched")
        return kwargs

    def _body(self, request: Request) -> dict[str, Any]:
        """The request's keyword arguments to `chat.completions.create`."""
        return dict(model=self.config.model, messages=[{"role": r, "content": c} for r, c in request.messages],
                    max_tokens=request.generation.max_tokens, **self._kwargs(request))

    def complete(self, request: Request) -> Reply:
        t0 = time.perf_counter()
        out, server = self._create(**self._body(request))
        return self._reply(out, time.perf_counter() - t0, {"server": server})

    def _reply(self, out: Any, latency: float, where: dict[str, Any]) -> Reply:
        """The reply as a Reply, or MalformedReply (an `error` row) when it holds no answer: no choices[0].message,
        no text (`content: null`, tool calls only, whitespace), a refusal (`refusal`, a `content_filter` finish),
        text that is not Unicode, or a field of the wrong type (a token count that is negative or no integer)."""
        body = lambda: reply_body(out)  # noqa: E731
        choices = field(out, "choices")  # the SDK does not validate: any JSON may sit where the API promises one
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = field(choice, "message")
        if message is None:
            raise MalformedReply("the reply has no choices[0].message", body=body())
        finish = field(choice, "finish_reason")
        if finish is not None and not isinstance(finish, str):
            raise MalformedReply(f"choices[0].finish_reason is not a string: {type(finish).__name__}", body=body())
        refusal = optional_text(field(message, "refusal"), "choices[0].message.refusal", body)
        if finish == "content_filter":
            refusal = refusal or "the server's content filter stopped the reply (finish_reason content_filter)"
        content = field(message, "content")
        if content is None and field(message, "tool_calls"):
            raise MalformedReply("no answer: the reply holds tool calls and no text", body=body(), kind="empty")
        text = answer_text(content, "choices[0].message.content", body, refusal=refusal)
        usage = field(out, "usage")
        details = field(usage, "prompt_tokens_details")
        completion_details = field(usage, "completion_tokens_details")
        reasoning_tokens = token_count(field(completion_details, "reasoning_tokens"),
                                       "usage.completion_tokens_details.reasoning_tokens", body)
        reasoning_text = optional_text(field(message, "reasoning_content"), "choices[0].message.reasoning_content",
                                       body)
        return Reply(
            text=text,
            finish_reason=finish or "unknown",
            prompt_tokens=token_count(field(usage, "prompt_tokens"), "usage.prompt_tokens", body),
            completion_tokens=token_count(field(usage, "completion_tokens"), "usage.completion_tokens", body),
            cached_tokens=token_count(field(details, "cached_tokens"), "usage.prompt_tokens_details.cached_tokens",
                                      body),
            latency_s=round(latency, 4),
            raw={"id": reply_name(field(out, "id")), "model": reply_name(field(out, "model")), "finish_reason": finish,
                 **where, "reasoning_tokens": reasoning_tokens, "reasoning_chars": len(reasoning_text)},
            thinking=bool(reasoning_text) or reasoning_tokens > 0,
        )

    # The Batch API (models.provider_batch): a JSONL file of requests uploaded with `files.create`, one batch over it
    # tagged in its metadata, results in the output file (and failures in the error file) as lines
    # {"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}. Always the first server.

    batch_limits = (50_000, 200 * 1024 * 1024)  # OpenAI Batch: requests, and bytes of the input file
    batch_tags = True  # `metadata` on create, shown by `batches.list`
    TAG_KEY = "blindeval_tag"

    def batch_item(self, key: str, request: Request) -> dict[str, Any]:
        """One line of the batch's input file (custom_id = call key)."""
        body = self._body(request)
        body.update(body.pop("extra_body", {}))  # what the SDK would merge into the JSON body
        return {"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body}

    def submit_batch(self, requests: dict[str, Request], tag: str) -> str:
        """Upload and start one batch (custom_id = call key, `tag` in its metadata); its id. Not retried: a retry
        after a lost answer could start, and pay for, a second batch (models.provider_batch finds it by its tag
        instead)."""
        lines = [json.dumps(self.batch_item(key, request)) for key, request in requests.items()]
        client = self.clients[0]
        upload = client.files.create(file=("requests.jsonl", ("\n".join(lines) + "\n").encode()), purpose="batch")
        return client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                     completion_window="24h", metadata={self.TAG_KEY: tag}).id

    def listed_batches(self, since: float) -> list[ListedBatch]:
        """The organisation's batches created at or after `since`, newest first (as the API lists them)."""
        out = []
        for b in with_retries(self.clients[0].batches.list, attempts=self.config.attempts)(limit=100):
            if b.created_at < since:
                break
            counts = b.request_counts
            out.append(ListedBatch(b.id, float(b.created_at), counts.total if counts else 0,
                                   (b.metadata or {}).get(self.TAG_KEY)))
        return out

    def batch_status(self, batch_id: str) -> tuple[bool, str]:
        """(ended, the provider's status)."""
        status = with_retries(self.clients[0].batches.retrieve, attempts=self.config.attempts)(batch_id).status
        return status in ("completed", "expired", "cancelled", "failed"), status

    def _result_lines(self, batch: Any) -> list[dict[str, Any]]:
        """The lines of an ended batch's output and error files, as JSON Lines: split at \\n only, since the text
        inside a line may hold U+2028, U+0085 and other characters `str.splitlines` would split at."""
        content = with_retries(self.clients[0].files.content, attempts=self.config.attempts)
        return [item for file_id in (batch.output_file_id, batch.error_file_id) if file_id
                for item in json_lines(content(file_id).content)]

    def batch_custom_ids(self, batch_id: str) -> set[str]:
        batch = with_retries(self.clients[0].batches.retrieve, attempts=self.config.attempts)(batch_id)
        return {item.get("custom_id") for item in self._result_lines(batch)}

    def batch_results(self, batch_id: str, keys: list[str]) -> dict[str, Reply | BatchFailed | None]:
        """Each key's reply or failure; None for a request the batch never ran (expired or cancelled first)."""
        import openai

        client = self.clients[0]
        batch = with_retries(client.batches.retrieve, attempts=self.config.attempts)(batch_id)
        out: dict[str, Reply | BatchFailed | None] = {}
        if batch.status == "failed":  # refused as a whole (e.g. a line it could not read): nothing ran
            errors = "; ".join(f"{e.code}: {e.message}" for e in (batch.errors.data or [])) if batch.errors else ""
            return {k: BatchFailed(f"batch {batch_id} failed: {errors or 'no reason given'}") for k in keys}
        for item in self._result_lines(batch):
            key, response, error = item.get("custom_id"), item.get("response") or {}, item.get("error") or {}
            if error.get("code") in ("batch_expired", "batch_cancelled"):
                out[key] = None
            elif response.get("status_code") == 200 and not error:
                try:
                    reply = openai.types.chat.ChatCompletion.model_validate(response.get("body"))
                    out[key] = self._reply(reply, 0.0, {"batch": batch_id})
                except (MalformedReply, ValueError) as e:
                    out[key] = BatchFailed(f"batch {batch_id}: unreadable result: {e}"[:500])
            else:
                said = error.get("message") or ((response.get("body") or {}).get("error") or {}).get("message")
                out[key] = BatchFailed(f"batch {batch_id}: {error.get('code') or 'error'}: {said}",
                                       response.get("status_code"))
        return {k: out.get(k) for k in keys}

    def close(self) -> None:
        for client in self.clients:
            client.close()


def open_openai(spec, quant: str | None, adapters: tuple, exp_dir, runtime) -> OpenAIBackend:
    return OpenAIBackend(OpenAIConfig(model=spec.source, base_urls=spec.urls(), attempts=spec.attempts,
                                      timeout_s=spec.timeout_s, deadline_s=spec.deadline_s,
                                      thinking_control=spec.thinking_control,
                                      api_key_env=spec.api_key_env or "OPENAI_API_KEY", structured=spec.structured))


def check_generation(model, g: Generation) -> list[tuple[str, str]]:
    """effort goes out only with thinking on, through the registered thinking_control."""
    if g.effort is not None and model.thinking_control == "none":
        return [("effort", f"effort cannot be sent to model {model.name!r}: it has no thinking_control")]
    if g.effort is not None and not g.thinking:
        return [("effort", "effort is registered but thinking is off")]
    if model.thinking_control == "reasoning_effort" and g.thinking and g.effort is None:
        return [("effort", "thinking on through reasoning_effort needs a registered effort")]
    return []


def expected_identity(spec, adapters: tuple, runtime, eff: dict[str, Any]) -> dict[str, Any]:
    """identity() as the registration gives it: what verify re-derives a call key from without a server."""
    return {"backend": OpenAIBackend.name, "model": spec.source, "base_urls": sorted(spec.urls()),
            **({"structured": spec.structured} if spec.structured != "json_schema" else {})}


INFO = BackendInfo(name=OpenAIBackend.name, open=open_openai, expected_identity=expected_identity,
                   sends=frozenset((*SENDS, "effort")),
                   model_keys=("thinking_control", "structured", "provider_batch", "batch_poll_s", "batch_max_requests",
                               "batch_max_bytes", "deadline_s"),
                   check_generation=check_generation)
