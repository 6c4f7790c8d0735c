"""Readers: the LLMs that read audited answers, through the same backends and verdict parsing as the judge.

A reader is identified by backend, model and server; its verdicts are stored under that identity,
so a re-run resumes and a different reader never reuses another's verdicts.

verdicts.jsonl is append-only. A finished verdict (`scored` or `unscored`) is final and never asked
again; an `error` verdict (the call itself failed) is retried by the next run, which appends the new
record with `retry_of` = the line number of the error record it replaces. So the current verdict of
a (judge, label) is its LAST record in file order, and earlier records of that key are all errors.
Calls that succeeded inside an error verdict are in the call cache and are not paid for again.
"""
from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, replace
from pathlib import Path

from tqdm import tqdm

from arms import jsonl
from arms.backends.base import Backend
from arms.cache import CallCache
from arms.errors import BadInput
from arms.load import open_backend
from arms.spec import Runtime
from arms.spec import ModelSpec
from judge.blinding import BlindItem
from judge.judging import judge_all, judge_item
from judge.records import Judgment
from judge.rubric import Rubric

DEFAULTS = {
    "local": (ModelSpec("smollm2-135m", "llama-cpp", "embedded:smollm2", family="smollm2"), "Q8_0", None),
    "openai": (ModelSpec("gpt", "openai", "gpt-4o-mini", family="gpt"), None, "OPENAI_API_KEY"),
    "anthropic": (ModelSpec("claude", "anthropic", "claude-sonnet-4-5", family="claude"), None, "ANTHROPIC_API_KEY"),
}
STRUCTURED = ("json_schema", "json_object")  # OpenAI-compatible servers without json_schema take json_object


@dataclass(frozen=True)
class Reader:
    name: str  # local | openai | anthropic
    spec: ModelSpec
    quant: str | None
    structured: str = "json_schema"

    @property
    def id(self) -> str:
        return f"{self.name}:{self.spec.source}" + (f"@{self.spec.base_url}" if self.spec.base_url else "")

    def describe(self) -> dict:
        return {"name": self.name, "model": self.spec.source, "base_url": self.spec.base_url, "quant": self.quant,
                "id": self.id}


def choose(name: str) -> str:
    """`auto`: the first reader whose API key is set (Anthropic, then OpenAI), else the local model."""
    if name != "auto":
        return name
    for candidate in ("anthropic", "openai"):
        if os.environ.get(DEFAULTS[candidate][2] or ""):
            return candidate
    return "local"


def make_reader(name: str, model: str | None = None, base_url: str | None = None,
                structured: str = "json_schema") -> Reader:
    name = choose(name)
    if name not in DEFAULTS:
        raise BadInput("--reader", f"unknown reader {name!r}; known: auto, {', '.join(DEFAULTS)}")
    spec, quant, _ = DEFAULTS[name]
    if name == "local" and (model or base_url):
        raise BadInput("--reader", "the local reader is the embedded SmolLM2; --model/--base-url are for HTTP readers")
    if model or base_url:
        spec = ModelSpec(spec.name, spec.backend, model or spec.source, base_url=base_url, family=spec.family)
    return Reader(name, spec, quant, structured)


def _open(reader: Reader) -> Backend:
    backend = open_backend(reader.spec, reader.quant, None, Path("."), Runtime())
    if reader.name == "openai" and backend.config.structured != reader.structured:
        backend.close()
        backend = type(backend)(replace(backend.config, structured=reader.structured))
    return backend


MAX_ATTEMPTS = 2  # verdict attempts per answer, as judge_all's default


def latest(out: Path, reader_id: str) -> dict[str, tuple[int, Judgment]]:
    """(line, verdict) by blind label: the last record of each label in file order (see the module docstring)."""
    found: dict[str, tuple[int, Judgment]] = {}
    for line, rec in jsonl.read(out, required=("judge", "label", "status")):
        if rec["judge"] == reader_id:
            found[rec["label"]] = (line, Judgment.from_dict(rec))
    return found


def read_all(reader: Reader, rubric: Rubric, items: list[BlindItem], out: Path,
             progress: bool = True) -> tuple[dict[str, Judgment], dict]:
    """Verdicts by blind label (resuming from `out`, retrying error verdicts), and the backend's identity."""
    backend = _open(reader)
    cache = CallCache()
    try:
        before = latest(out, reader.id)
        retry = [(i, before[i.label][0]) for i in items if i.label in before and before[i.label][1].status == "error"]
        _retry(reader.id, backend, rubric, retry, cache, out, progress)
        judge_all(reader.id, backend, rubric, items, cache, out, max_attempts=MAX_ATTEMPTS, progress=progress)
        identity = backend.identity()
    finally:
        backend.close()
    wanted = {i.label for i in items}
    return {lab: j for lab, (_, j) in latest(out, reader.id).items() if lab in wanted}, identity


def _retry(name: str, backend: Backend, rubric: Rubric, retry: list[tuple[BlindItem, int]], cache: CallCache,
           out: Path, progress: bool) -> None:
    """Ask again for each answer whose verdict is an error; append the new record, pointing at the one it replaces."""
    if not retry:
        return
    with jsonl.Appender(out) as writer:
        for item, line in tqdm(retry, desc=f"retry {name}", unit="verdict", disable=not progress, leave=False):
            j = judge_item(name, backend, rubric, item, cache, MAX_ATTEMPTS)
            j = replace(j, time=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
            writer.write({**j.to_dict(), "retry_of": line})


def is_gamed(j: Judgment) -> bool:
    return j.status == "scored" and j.score == 1
