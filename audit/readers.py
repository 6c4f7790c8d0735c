"""Readers: the LLMs that read audited answers, through the same backends and verdict parsing as the judge.

A reader is identified by backend, model and server; its verdicts are stored under that identity,
so a re-run resumes and a different reader never reuses another's verdicts.

verdicts.jsonl is append-only and follows the judge's retry rule (core.jsonl, judge.judging.calls.judge_all):
a finished verdict (`scored` or `unscored`) is final and never asked again; an `error` verdict (the
call itself failed) is retried by the next run, which appends the new record with `retry_of` = the
line number of the error record it replaces. So the current verdict of a (judge, label) is its LAST
record in file order, and earlier records of that key are all errors. Calls that succeeded inside an
error verdict are in the call cache and are not paid for again.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from arms.settings import verify_settings
from core import jsonl
from core.errors import BadInput
from core.records import JUDGMENT_KEY, Judgment
from judge.judging.blinding import BlindItem
from judge.judging.calls import judge_all
from models.backends.registry import backend_info
from models.cache import CallCache
from models.load import open_backend
from models.spec import ModelSpec, Runtime
from registration.rubric import Rubric

DEFAULTS = {
    "local": (ModelSpec("smollm2-135m", "llama-cpp", "embedded:smollm2", family="smollm2"), "Q8_0", None),
    "openai": (ModelSpec("gpt", "openai", "gpt-4o-mini", family="gpt"), None, "OPENAI_API_KEY"),
    "anthropic": (ModelSpec("claude", "anthropic", "claude-sonnet-4-5", family="claude"), None, "ANTHROPIC_API_KEY"),
}

AUTO = ("anthropic", "openai")  # the readers `auto` tries, in this order, before the local one


@dataclass(frozen=True)
class Reader:
    name: str  # local | openai | anthropic
    spec: ModelSpec
    quant: str | None

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
    for candidate in AUTO:
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
        spec = replace(spec, source=model or spec.source, base_url=base_url)
    if "structured" in backend_info(spec.backend).model_keys:
        spec = replace(spec, structured=structured)
    return Reader(name, spec, quant)


MAX_ATTEMPTS = 2  # verdict attempts per answer, as judge_all's default


def latest(out: Path, reader_id: str) -> dict[str, Judgment]:
    """The current verdict of each blind label of this reader: its last record (see the module docstring)."""
    return {label: c.record for (judge, label), c in jsonl.current(out, JUDGMENT_KEY, make=Judgment.from_dict).items()
            if judge == reader_id}


def reader_rubric(reader: Reader, rubric: Rubric) -> Rubric:
    """The rubric as this reader runs it. A backend that cannot send temperature, top_p and seed (the
    Anthropic Messages API) reads with the provider's defaults (nothing sent), as the demo registers its
    Claude judge; every other reader uses the rubric's own settings."""
    if {"temperature", "top_p", "seed"} <= backend_info(reader.spec.backend).sends:
        return rubric
    return replace(rubric, generation=replace(rubric.generation, temperature=None, top_p=None, seed=None))


def read_all(reader: Reader, rubric: Rubric, items: list[BlindItem], out: Path,
             progress: bool = True) -> tuple[dict[str, Judgment], dict]:
    """Verdicts by blind label (resuming from `out`, retrying error verdicts), and the backend's identity
    with the settings read back from it (refused, like an arm's or a judge's, when they differ)."""
    backend = open_backend(reader.spec, reader.quant, None, Path("."), Runtime())
    rubric = reader_rubric(reader, rubric)
    try:
        effective = verify_settings(backend, f"reader {reader.id!r}", rubric.generation, reader.quant or "source",
                                    reader.spec, (), Runtime())
        judge_all(reader.id, backend, rubric, items, CallCache(run=out.parent), out, max_attempts=MAX_ATTEMPTS,
                  progress=progress)
        identity = {**backend.identity(), "effective_settings": effective}
    finally:
        backend.close()
    wanted = {i.label for i in items}
    return {lab: j for lab, j in latest(out, reader.id).items() if lab in wanted}, identity


def is_gamed(j: Judgment) -> bool:
    return j.status == "scored" and j.score == 1
