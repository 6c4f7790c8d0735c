"""The one small Protocol every model backend implements, and the request/reply records it speaks.

A backend turns a chat `Request` into a `Reply`. It also says what it *really* uses
(`effective`), so the runner can compare that with the registration before the first call.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from ..spec import AdapterSpec, ModelSpec, Runtime


@dataclass(frozen=True)
class Generation:
    """Registered generation settings for one arm or judge."""

    temperature: float | None = 0.0  # None: "provider-default", not sent (APIs that refuse sampling settings)
    top_p: float | None = 1.0
    max_tokens: int = 256
    seed: int | None = 0  # None: "provider-default" (an API without seeds)
    stop: tuple[str, ...] = ()
    thinking: bool = False
    system: str | None = None
    thinking_budget: int | None = None  # Anthropic extended thinking: budget_tokens (required when thinking is on)
    effort: str | None = None  # OpenAI reasoning_effort / Anthropic output_config.effort; None: not sent

    def to_dict(self) -> dict[str, Any]:
        """As registered. The two optional extensions are left out when unset, so that the call keys of
        requests made before they existed (the cache hashes this dict) still match."""
        d = asdict(self)
        d["stop"] = list(self.stop)
        for key in OPTIONAL:
            if d[key] is None:
                del d[key]
        return d


OPTIONAL = ("thinking_budget", "effort")
STRUCTURED = ("json_schema", "json_object", "none")  # how an OpenAI-compatible server is asked for structured output


@dataclass(frozen=True)
class Request:
    """One chat call. `schema` (JSON schema as canonical text) asks for structured output.

    `attempt` numbers the tries of one verdict: a retry asks the same prompt again, and with a
    provider-default seed nothing else tells its call apart from the first, which the call cache
    would then answer. It is not sent; it is in `to_dict` (the cache key) only from 2 on, so the
    keys of first attempts made before it existed still match. `retest` numbers a verdict asked again to measure
    the judge's test-retest reliability ([judge] retest): likewise never sent, in the key only above 0, so a
    retest is a call of its own that the cache cannot answer with the original."""

    messages: tuple[tuple[str, str], ...]
    generation: Generation
    schema: str | None = None
    attempt: int = 1
    retest: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = {
            "messages": [{"role": r, "content": c} for r, c in self.messages],
            "generation": self.generation.to_dict(),
            "schema": json.loads(self.schema) if self.schema else None,
        }
        if self.attempt > 1:
            d["attempt"] = self.attempt
        if self.retest > 0:
            d["retest"] = self.retest
        return d


@dataclass(frozen=True)
class Reply:
    """What came back, with the telemetry the report needs (docs/reward-telemetry.md: truncation must be visible)."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached_tokens: int = 0
    raw: dict[str, Any] = field(default_factory=dict)
    thinking: bool = False  # the reply shows thinking (a thinking block, reasoning text or reasoning tokens)

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Reply":
        return cls(**{k: d[k] for k in ("text", "finish_reason", "prompt_tokens", "completion_tokens",
                                         "latency_s", "cached_tokens", "raw", "thinking") if k in d})


class Backend(Protocol):
    """A model behind one interface: local llama.cpp, OpenAI(-compatible) or Anthropic."""

    name: str

    def identity(self) -> dict[str, Any]:
        """What determines the model's output apart from the request: model sha256, quant, adapter, backend."""
        ...

    def effective(self) -> dict[str, Any]:
        """Settings read back from the loaded model/server (quant type, chat template sha, threads...)."""
        ...

    def sent(self, generation: Generation) -> dict[str, Any]:
        """What this backend really sends for `generation`, named as registered; None = not sent/not honoured."""
        ...

    def read_back(self, generation: Generation) -> dict[str, Any]:
        """The sampling settings (READ_BACK) the model really used for `generation`, as the backend reports them,
        or NOT_VERIFIABLE for each one it cannot report: what is sent is no proof that it is honoured."""
        ...

    def complete(self, request: Request) -> Reply: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ListedBatch:
    """One batch as the provider's list shows it: enough to tell whether it is one this harness submitted."""

    batch_id: str
    created: float  # seconds since the epoch, by the provider's clock
    requests: int
    tag: str | None  # the tag it was submitted with, where the provider keeps one


class ParallelDecoding(Backend, Protocol):
    """A backend whose BackendInfo declares `parallel_decoding` (llama.cpp with `[runtime] batch` N > 1): the N
    calls in flight decode together, one token of each per step. Which calls share a step changes their numbers,
    so the call loop (models.call_loop) tells it how many threads are calling, and each step waits for all of them
    instead of for whoever arrived first."""

    def callers(self, n: int) -> Callable[[], None]:
        """`n` more threads will each keep one call in flight until each calls the function returned."""
        ...


class ProviderBatchBackend(Backend, Protocol):
    """A backend whose provider answers batches (its BackendInfo.model_keys lists `provider_batch`);
    models.provider_batch drives it."""

    batch_limits: tuple[int, int]  # the provider's most requests, and bytes of requests, in one batch

    def batch_item(self, key: str, request: Request) -> dict[str, Any]:
        """The request as the batch carries it (its size counts against the provider's limit)."""
        ...

    batch_tags: bool  # a batch carries the tag it is submitted with, and the provider's list shows it

    def submit_batch(self, requests: dict[str, Request], tag: str) -> str:
        """Start one batch of `requests` (custom_id = the call key), tagged where the provider takes tags; its id."""
        ...

    def listed_batches(self, since: float) -> list["ListedBatch"]:
        """The provider's batches created at or after `since` (seconds since the epoch), newest first."""
        ...

    def batch_custom_ids(self, batch_id: str) -> set[str]:
        """The custom_ids of an ended batch's requests, as its results list them."""
        ...

    def batch_status(self, batch_id: str) -> tuple[bool, str]:
        """(ended, the provider's own status word)."""
        ...

    def batch_results(self, batch_id: str, keys: list[str]) -> dict[str, Any]:
        """Per key of an ended batch: its Reply, a models.retry.BatchFailed, or None when the batch never ran it."""
        ...


SENDS = ("temperature", "top_p", "max_tokens", "seed", "stop", "thinking", "system")  # what most backends can send
READ_BACK = ("temperature", "top_p", "seed")
NOT_VERIFIABLE = "not verifiable"
NOT_USED = "not used (greedy)"  # read back as greedy decoding, which no top_p or seed can change


def nothing_read_back() -> dict[str, Any]:
    """The read-back of a backend that cannot tell which sampling settings it used."""
    return {key: NOT_VERIFIABLE for key in READ_BACK}


UNKNOWN = object()  # in an expected identity: a field the read-back settings do not hold, so it is not compared


@dataclass(frozen=True)
class BackendInfo:
    """What the harness may know about one backend, declared once in the backend's own module and listed in
    `models.backends.registry`. Collection, judging, spec parsing and settings verification ask this instead of
    comparing backend names, so a new backend is one module plus one registry line. A further way of running is
    one more capability here, with the protocol its backend then implements: several sequences decoded together
    is `parallel_decoding` (ParallelDecoding), which `workers` turns into the registered `[runtime] batch` calls in
    flight; a provider's batch API is `provider_batch` in `model_keys` (ProviderBatchBackend)."""

    name: str
    open: Callable[[ModelSpec, str | None, tuple[AdapterSpec, ...], Path, Runtime], Backend]
    serial: bool = False  # one call at a time (an in-process model is not thread-safe); else the model's concurrency
    parallel_decoding: bool = False  # with `[runtime] batch` N > 1, N calls decode together (ParallelDecoding)
    local: bool = False  # runs a GGUF in process: quantised here, adapters applied here, machine facts recorded
    sends: frozenset[str] = frozenset(SENDS)  # the Generation settings it has a way to send
    model_keys: tuple[str, ...] = ()  # [models.*] keys only some backends read, that this one reads
    # further registration rules, as (field, message) for each generation setting it cannot honour
    check_generation: Callable[[ModelSpec, Generation], list[tuple[str, str]]] = lambda model, g: []
    # differences between the registration and what only this backend reads back (file types, threads...)
    differences: Callable[..., list[str]] = lambda generation, eff, quant, model, adapters, runtime: []
    # the identity (the part of every call key that is not the request) the registration and the settings read back
    # give, as identity() writes it, so verify can re-derive call keys without the live backend; None: not known
    expected_identity: Callable[..., dict[str, Any] | None] = lambda spec, adapters, runtime, eff: None

    def workers(self, concurrency: int, parallel_sequences: int = 1) -> int:
        """Calls in flight at once: the registered sequences for a backend that decodes in parallel, else 1 or the
        model's concurrency."""
        if self.parallel_decoding and parallel_sequences > 1:
            return parallel_sequences
        return 1 if self.serial else max(1, concurrency)
