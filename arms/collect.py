"""Answer collection: every (arm, quant, question, sample) once, resumable, nothing lost on a kill.

answers.jsonl is append-only; a finished (`ok`) row is never redone, and every model call goes
through the content-addressed cache, so an interrupted run resumes without repeating a finished
call. A call that fails after its retries becomes an `error` row with the cause, never an empty
answer; the next run asks exactly those rows again and appends each new row with `retry_of` = the
error row's line (core.jsonl's retry rule), the calls that succeeded inside a failed glue answer
coming from the cache. HTTP backends answer several questions at once (bounded by the model's registered
concurrency) but rows are still written in task order: a kill leaves a prefix, and the calls
finished beyond it are in the cache (models.call_loop, the loop verdicts go through too). A model
registered with `provider_batch = true` is asked through its provider's batch API first (models.provider_batch),
and the same loop then writes the rows from the batch's results.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from tqdm import tqdm

from core import jsonl
from core.errors import BadInput, CheckFailed
from core.records import ANSWER_KEY, AnswerRow, row_id
from core.text import has_surrogate
from models import call_loop, provider_batch
from models.backends.base import Backend, Reply, Request
from models.backends.registry import backend_info
from models.cache import CallCache, call_key
from models.load import open_backend
from models.provider_batch import ProviderBatching
from models.retry import describe, is_call_failure
from models.spec import AdapterSpec, ModelSpec, Runtime
from registration.questions import Question
from registration.spec import ArmSpec

from .glue import GlueResult, load_glue
from .settings import check_reply, row_effective, verify_settings


@dataclass(frozen=True)
class Task:
    arm: ArmSpec
    quant: str
    question: Question
    sample: int

    @property
    def row(self) -> str:
        return row_id(self.arm.name, self.quant, self.question.id, self.sample)

    @property
    def seed(self) -> int | None:
        seed = self.arm.generation.seed
        return None if seed is None else seed + self.sample


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
        request = task_request(self.task, messages)
        reply, key, cached = call_loop.cached_call(self.backend, self.cache, request)
        check_reply(f"arm {self.task.arm.name!r} at {self.task.quant}", request.generation, reply)
        self.cached += cached
        self.keys.append(key)
        self.last = reply
        self.tokens[0] += reply.prompt_tokens
        self.tokens[1] += reply.completion_tokens
        self.latency += reply.latency_s
        return reply


def task_request(t: Task, messages: list[tuple[str, str]]) -> Request:
    """The request a task's call sends: its messages under the arm's settings, with this sample's seed."""
    return Request(tuple((r, c) for r, c in messages), replace(t.arm.generation, seed=t.seed))


def plain_messages(arm: ArmSpec, question: Question) -> list[tuple[str, str]]:
    system = arm.generation.system
    return ([("system", system)] if system else []) + [("user", question.question)]


def prompt_order(tasks: list[Task]) -> list[Task]:
    """Order so consecutive prompts share the longest prefix, which llama.cpp reuses from its KV cache.

    Same arm (system prompt, glue) together, questions by text (shared openings), and the K samples
    of one question back to back (the whole prompt is reused). Stable, so the order is deterministic.
    """
    return sorted(tasks, key=lambda t: (t.arm.glue or "", t.arm.generation.system or "", t.arm.name,
                                        t.question.question, t.question.id, t.sample))


def _group_key(t: Task) -> tuple:
    return (t.arm.model, t.quant, t.arm.adapters)


def collect(arms: list[ArmSpec], models: dict[str, ModelSpec], adapters: dict[str, AdapterSpec],
            questions: list[Question], exp_dir: Path, runtime: Runtime, out: Path, cache: CallCache,
            progress: bool = True, order: Callable[[list[Task]], list[Task]] = prompt_order) -> dict[str, Any]:
    """Answer every missing or `error` row into `out`; return what this invocation did, and the effective settings."""
    resume = call_loop.Resume.of(out, ANSWER_KEY)
    tasks = [Task(a, q, qu, s) for a in arms for q in a.quants for qu in questions for s in range(a.samples)]
    for t in tasks:  # a row is skipped by its id alone only if it was answered under the settings registered now
        done = resume.done.get((t.row,))
        if done is None or (t.row,) in resume.retry:
            continue
        registered = json.loads(json.dumps({**t.arm.generation.to_dict(), "seed": t.seed}))
        recorded = done.record.get("settings") or {}
        if recorded != registered:
            differ = ", ".join(f"{k} {recorded.get(k)!r} (registered now: {registered.get(k)!r})"
                               for k in sorted(set(recorded) | set(registered)) if recorded.get(k) != registered.get(k))
            raise BadInput(out, f"the answer of arm {t.arm.name!r} at {t.quant} to question {t.question.id!r} (sample "
                           f"{t.sample}) was collected with other settings: {differ}. One folder holds one "
                           "registration: collect into another folder", line=done.line, field="settings")
    todo = [t for t in tasks if resume.wanted((t.row,))]
    groups: dict[tuple, list[Task]] = {}  # one model load per (model, quant, adapters)
    for t in todo:
        groups.setdefault(_group_key(t), []).append(t)
    stats: dict[str, Any] = {"rows_total": len(tasks), "rows_already_done": len(tasks) - len(todo),
                             "rows_retried": sum((t.row,) in resume.retry for t in todo), "model_calls": 0,
                             "cached_calls": 0, "errors": 0,
                             "effective": recorded_effective([c.record for c in resume.done.values()])}
    bar = tqdm(total=len(todo), desc="answers", unit="ans", disable=not progress, leave=False)
    with jsonl.Appender(out) as writer:  # the file exists (and a torn last line is repaired) from the start
        for (model_name, quant, adapter_names), group in groups.items():
            model = models[model_name]
            specs = tuple(adapters[a] for a in adapter_names)
            backend = open_backend(model, quant, specs, exp_dir, runtime)
            try:
                effective = {}
                for arm in {t.arm.name: t.arm for t in group}.values():
                    effective[arm.name] = verify_settings(backend, f"arm {arm.name!r}", arm.generation, quant, model,
                                                          specs, runtime)
                    stats["effective"][f"{arm.name}/{quant}"] = effective[arm.name]
                batching = ProviderBatching.of(model, out.parent)
                if batching:  # plain arms only (glue on a batch model is refused at registration)
                    requests = [task_request(t, plain_messages(t.arm, t.question)) for t in group]
                    backend = provider_batch.answer(backend, {call_key(backend.identity(), r): r for r in requests},
                                                    cache, batching, progress)
                workers = backend_info(model.backend).workers(model.concurrency, runtime.parallel_sequences)

                def one(t: Task, backend=backend, effective=effective) -> list[AnswerRow]:
                    caller = Caller(backend, cache, t)
                    return [_answer(t, caller, exp_dir, row_effective(effective[t.arm.name], t.seed))]

                tally = call_loop.run(writer, resume, order(group), one, backend, workers,
                                      advance=bar.update)
                stats["model_calls"] += tally.model_calls
                stats["cached_calls"] += tally.cached_calls
                stats["errors"] += tally.errors
            finally:
                backend.close()
    bar.close()
    return stats


def recorded_effective(rows: list[dict]) -> dict[str, Any]:
    """Each (arm, quant)'s effective settings as its first row records them (a resume that loads no model reports
    the same)."""
    out: dict[str, Any] = {}
    for rec in rows:
        if rec.get("effective"):
            out.setdefault(f"{rec['arm']}/{rec['quant']}", rec["effective"])
    return out


def glue_fault(glue: str, question_id: str, exc: Exception) -> BadInput:
    """User glue that raises is the user's code at fault: exit 2 naming its file, line and the question, not a
    traceback of ours. Rows already written are kept; a re-run after the fix resumes."""
    import traceback

    module = glue.partition(":")[0].removesuffix(".py").replace(".", "/")
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if module in f.filename.replace("\\", "/")]
    where = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    return BadInput(where.filename, f"glue {glue!r} raised {type(exc).__name__}: {exc} (question {question_id!r}, "
                    f"in {where.name}: {where.line})", line=where.lineno, field="glue")


def _answer(t: Task, caller: Caller, exp_dir: Path, effective: dict[str, Any]) -> AnswerRow:
    ident = caller.backend.identity()
    lora = ident.get("lora_sha256")
    base = dict(row=t.row, arm=t.arm.name, quant=t.quant, question_id=t.question.id, sample=t.sample,
                model_sha256=ident.get("model_sha256"), lora_sha256=",".join(lora) if lora else None,
                settings={**t.arm.generation.to_dict(), "seed": t.seed}, effective=effective, identity=ident)
    start = time.perf_counter()
    try:
        if t.arm.glue:
            result = load_glue(t.arm.glue, exp_dir)(t.question, caller, exp_dir)
            answer = getattr(result, "answer", None)
            if not isinstance(answer, str) or has_surrogate(answer):  # it could not be written, hashed or judged
                what = "text holding a lone surrogate" if isinstance(answer, str) else type(answer).__name__
                raise BadInput(exp_dir / "prereg.toml", f"glue {t.arm.glue!r} of arm {t.arm.name!r} answered question "
                               f"{t.question.id!r} with {what}: a GlueResult's answer must be a string of Unicode "
                               "text", field="glue")
        else:
            reply = caller(plain_messages(t.arm, t.question))
            result = GlueResult(reply.text)
    except Exception as e:  # the backend gave up after its retries: record the cause, never an empty answer
        if t.arm.glue and not isinstance(e, (BadInput, CheckFailed)) and not is_call_failure(e):
            raise glue_fault(t.arm.glue, t.question.id, e) from e
        if not is_call_failure(e):
            raise  # a bad registration, a refused check, or a bug: stop loudly
        return AnswerRow(**base, status="error", text=None, raw_output=None, finish_reason=None, truncated=False,
                         prompt_tokens=caller.tokens[0], completion_tokens=caller.tokens[1],
                         latency_s=round(time.perf_counter() - start, 4), calls=caller.keys,
                         cached_calls=caller.cached, error=describe(e))
    last = caller.last
    return AnswerRow(**base, status="ok", text=result.answer, raw_output=last.text if last else None,
                     finish_reason=last.finish_reason if last else "glue",
                     truncated=bool(last and last.truncated), thinking=bool(last and last.thinking),
                     prompt_tokens=caller.tokens[0],
                     completion_tokens=caller.tokens[1], latency_s=round(caller.latency, 4), calls=caller.keys,
                     cached_calls=caller.cached, trace=result.trace or None)
