"""Answer collection: every (arm, quant, question, sample) once, resumable, nothing lost on a kill.

answers.jsonl is append-only; a row that is already there is never redone, and every model call
goes through the content-addressed cache, so an interrupted run resumes without repeating a
finished call. A call that fails after its retries becomes an `error` row with the cause, never an
empty answer.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from . import jsonl
from .backends.base import Backend, Reply, Request
from .cache import CallCache, call_key
from .errors import BadInput, CheckFailed, NotBuilt
from .glue import GlueResult, load_glue
from .load import Runtime, open_backend
from .questions import Question
from .records import AnswerRow, row_id
from .retry import describe
from .spec import AdapterSpec, ArmSpec, ModelSpec


@dataclass(frozen=True)
class Task:
    arm: ArmSpec
    quant: str
    question: Question
    sample: int

    @property
    def row(self) -> str:
        return row_id(self.arm.name, self.quant, self.question.id, self.sample)


class Caller:
    """The model-call function handed to glue: cached, and counting what it did."""

    def __init__(self, backend: Backend, cache: CallCache, task: Task):
        self.backend, self.cache, self.task = backend, cache, task
        self.keys: list[str] = []
        self.cached = 0
        self.last: Reply | None = None
        self.tokens = [0, 0]
        self.latency = 0.0

    def __call__(self, messages: list[tuple[str, str]]) -> Reply:
        g = self.task.arm.generation
        gen = type(g)(**{**g.__dict__, "seed": g.seed + self.task.sample})
        request = Request(tuple((r, c) for r, c in messages), gen)
        key = call_key(self.backend.identity(), request)
        reply = self.cache.get(key)
        if reply is None:
            reply = self.backend.complete(request)
            self.cache.put(key, reply)
        else:
            self.cached += 1
        self.keys.append(key)
        self.last = reply
        self.tokens[0] += reply.prompt_tokens
        self.tokens[1] += reply.completion_tokens
        self.latency += reply.latency_s
        return reply


def plain_messages(arm: ArmSpec, question: Question) -> list[tuple[str, str]]:
    system = arm.generation.system
    return ([("system", system)] if system else []) + [("user", question.question)]


def verify_settings(backend: Backend, arm: ArmSpec, quant: str, adapter: AdapterSpec | None, runtime: Runtime) -> dict:
    """Read back what the backend will really use and refuse when it differs from the registration."""
    eff = backend.effective()
    if eff.get("backend") != "llama-cpp":
        return eff
    problems = []
    if quant != "source" and eff["file_type"] != f"MOSTLY_{quant}":
        problems.append(f"quant: registered {quant}, model file says {eff['file_type']}")
    if bool(adapter) != bool(eff["lora_path"]):
        problems.append(f"adapter: registered {adapter.name if adapter else None}, loaded {eff['lora_path']}")
    if eff["n_threads"] != runtime.threads or eff["n_threads_batch"] != runtime.threads:
        problems.append(f"threads: registered {runtime.threads}, llama.cpp uses {eff['n_threads']}/{eff['n_threads_batch']}")
    if problems:
        raise CheckFailed(f"arm {arm.name!r} at {quant}: settings differ from the registration: " + "; ".join(problems))
    return eff


def collect(arms: list[ArmSpec], models: dict[str, ModelSpec], adapters: dict[str, AdapterSpec],
            questions: list[Question], exp_dir: Path, runtime: Runtime, out: Path, cache: CallCache,
            progress: bool = True) -> dict[str, Any]:
    done = {rec["row"] for _, rec in jsonl.read(out, required=("row",))}
    tasks = [Task(a, q, qu, s) for a in arms for q in a.quants for qu in questions for s in range(a.samples)]
    todo = [t for t in tasks if t.row not in done]
    # one model load per (model, quant, adapter); questions in order inside a group
    groups: dict[tuple, list[Task]] = {}
    for t in todo:
        groups.setdefault((t.arm.model, t.quant, t.arm.adapter), []).append(t)
    stats = {"rows_total": len(tasks), "rows_already_done": len(tasks) - len(todo), "model_calls": 0,
             "cached_calls": 0, "errors": 0, "effective": {}}
    bar = tqdm(total=len(todo), desc="answers", unit="ans", disable=not progress, leave=False)
    with jsonl.Appender(out) as writer:
        for (model, quant, adapter_name), group in groups.items():
            adapter = adapters.get(adapter_name) if adapter_name else None
            backend = open_backend(models[model], quant, adapter, exp_dir, runtime)
            try:
                for arm in {t.arm.name: t.arm for t in group}.values():
                    stats["effective"][f"{arm.name}/{quant}"] = verify_settings(backend, arm, quant, adapter, runtime)
                for t in group:
                    caller = Caller(backend, cache, t)
                    row = _answer(t, caller, exp_dir, backend)
                    writer.write(row.to_dict())
                    stats["model_calls"] += len(caller.keys) - caller.cached
                    stats["cached_calls"] += caller.cached
                    stats["errors"] += row.status == "error"
                    bar.update(1)
            finally:
                backend.close()
    bar.close()
    return stats


def _answer(t: Task, caller: Caller, exp_dir: Path, backend: Backend) -> AnswerRow:
    ident = backend.identity()
    base = dict(row=t.row, arm=t.arm.name, quant=t.quant, question_id=t.question.id, sample=t.sample,
                model_sha256=ident.get("model_sha256"), lora_sha256=ident.get("lora_sha256"),
                settings={**t.arm.generation.to_dict(), "seed": t.arm.generation.seed + t.sample})
    start = time.perf_counter()
    try:
        if t.arm.glue:
            result = load_glue(t.arm.glue)(t.question, caller, exp_dir)
        else:
            reply = caller(plain_messages(t.arm, t.question))
            result = GlueResult(reply.text)
    except (BadInput, CheckFailed, NotBuilt):
        raise
    except Exception as e:  # the backend gave up after its retries: record the cause, never an empty answer
        return AnswerRow(**base, status="error", text=None, raw_output=None, finish_reason=None, truncated=False,
                         prompt_tokens=caller.tokens[0], completion_tokens=caller.tokens[1],
                         latency_s=round(time.perf_counter() - start, 4), calls=caller.keys,
                         cached_calls=caller.cached, error=describe(e))
    last = caller.last
    return AnswerRow(**base, status="ok", text=result.answer, raw_output=last.text if last else None,
                     finish_reason=last.finish_reason if last else "glue",
                     truncated=bool(last and last.truncated), prompt_tokens=caller.tokens[0],
                     completion_tokens=caller.tokens[1], latency_s=round(caller.latency, 4), calls=caller.keys,
                     cached_calls=caller.cached, trace=result.trace or None)
