"""Readers: the LLMs that read audited answers, through the same backends and verdict parsing as the judge.

A reader is identified by backend, model and server; its verdicts are stored under that identity,
so a re-run resumes and a different reader never reuses another's verdicts.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from arms import jsonl
from arms.backends.base import Backend
from arms.cache import CallCache
from arms.errors import BadInput
from arms.load import open_backend
from arms.spec import Runtime
from arms.spec import ModelSpec
from judge.blinding import BlindItem
from judge.judging import judge_all
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


def read_all(reader: Reader, rubric: Rubric, items: list[BlindItem], out: Path,
             progress: bool = True) -> tuple[dict[str, Judgment], dict]:
    """Verdicts by blind label (resuming from `out`), and the backend's identity."""
    backend = _open(reader)
    try:
        judge_all(reader.id, backend, rubric, items, CallCache(), out, progress=progress)
        identity = backend.identity()
    finally:
        backend.close()
    wanted = {i.label for i in items}
    verdicts = (Judgment.from_dict(r) for _, r in jsonl.read(out))
    return {j.label: j for j in verdicts if j.judge == reader.id and j.label in wanted}, identity


def is_gamed(j: Judgment) -> bool:
    return j.status == "scored" and j.score == 1
