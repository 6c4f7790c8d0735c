"""answers.jsonl re-derived (judge.verify.rederive): each answer record against the registration (arm, quant,
sample, settings, the settings and model file read back), its backend identity against the one the registration
gives, its call keys re-derived from its request (a glue arm's by running its registered glue again, contained, on
the recorded replies), its calls and reply against the call cache; and every cell of the bound scope answered."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from arms.collect import Task, plain_messages, task_request
from arms.contained import GlueSession, Outcome
from arms.settings import differences
from core import jsonl
from core.errors import BadInput
from core.records import row_id
from models.backends.base import UNKNOWN, Reply
from models.backends.registry import backend_info
from models.cache import call_key
from models.spec import AdapterSpec, ModelSpec, Runtime
from registration.prereg import Experiment
from registration.questions import Question
from registration.spec import ArmSpec

from ..results.runinfo import Scope
from .replies import Replies


def missing_answers(path: Path, exp: Experiment, scope: Scope, have: set[str]) -> list[str]:
    """Every cell of the bound scope without a current row: each names its arm, quant, question and sample."""
    out = []
    for name in scope.arms:
        arm = exp.arm(name)
        for quant in arm.quants:
            for qid in scope.question_ids:
                for sample in range(arm.samples):
                    row = row_id(name, quant, qid, sample)
                    if row not in have:
                        out.append(f"{path}: no answer row for arm {name!r} at {quant}, question {qid!r}, sample "
                                   f"{sample} (row {row}): binding.json registers this cell, and every cell has one "
                                   "current row, an answer or an error")
    return out


_ABSENT = object()


def expected_identity(spec: ModelSpec, adapters: tuple[AdapterSpec, ...], runtime: Runtime,
                      eff: dict[str, Any]) -> dict[str, Any] | None:
    """The backend identity (the part of every call key that is not the request) that the registration and the
    settings read back from the model (`eff`) give, as the backend declares it; None for a backend whose identity
    verify cannot know."""
    return backend_info(spec.backend).expected_identity(spec, adapters, runtime, eff)


def _json(value: Any) -> str:
    return "nothing" if value is _ABSENT else json.dumps(value, sort_keys=True)


def identity_findings(ident: dict[str, Any], spec: ModelSpec, quant: str | None, adapters: tuple[AdapterSpec, ...],
                      runtime: Runtime, eff: dict[str, Any]) -> list[tuple[str, str]] | None:
    """(field, message) for each way a recorded backend identity differs from the one the registration and the
    settings read back give (expected_identity), compared as JSON (a call key hashes it so), and from the
    registered sha256 pins. None when the backend's identity is not one verify knows."""
    want = expected_identity(spec, adapters, runtime, eff)
    if want is None:
        return None
    out: list[tuple[str, str]] = []
    source = f"the registration of model {spec.name!r}, [runtime] and the settings read back from it"
    for key in sorted(set(ident) | set(want)):
        got, expected = ident.get(key, _ABSENT), want.get(key, _ABSENT)
        if expected is not UNKNOWN and _json(got) != _json(expected):
            out.append((f"identity.{key}", f"reads {_json(got)}, but {source} give {_json(expected)}"))
    pins = [("model_sha256", ident.get("model_sha256"), spec.sha256.get(quant or "source"),
             f"the sha256 registered for {spec.name!r} at {quant or 'source'}"),
            ("chat_template_sha256", ident.get("chat_template_sha256"), spec.chat_template_sha256,
             "the registered chat_template_sha256")]
    lora = ident.get("lora_sha256")
    lora = lora if isinstance(lora, list) else []  # another kind of value is the identity finding above
    pins += [(f"lora_sha256[{i}]", lora[i] if i < len(lora) else None, a.sha256,
              f"the sha256 registered for adapter {a.name!r}") for i, a in enumerate(adapters)]
    for key, got, pin, what in pins:
        if pin and got != pin:
            out.append((f"identity.{key}", f"reads {got!r}, but {what} is {pin!r}"))
    return out


def _glue_calls(session: GlueSession, arm: ArmSpec, quant: str, question: Question, sample: int,
                ident: dict[str, Any], rec: dict[str, Any], replies: Replies, where: str) -> tuple[list[str], Outcome]:
    """Run the arm's registered glue again (contained: `session`) on the row's recorded replies: the call keys its
    requests derive (up to the first call whose reply is unknown or not recorded) and how it ended (Outcome
    "answer" with its final answer when it got that far). Glue is deterministic (arms.glue): the same question and
    replies give the same calls and answer."""
    task, calls, derived = Task(arm, quant, question, sample), rec.get("calls") or [], []

    def call_model(messages: list[tuple[str, str]]) -> Reply | None:
        key = call_key(ident, task_request(task, messages))
        i = len(derived)
        derived.append(key)
        if i >= len(calls) or calls[i] != key:
            return None
        reply = replies.get(key, f"{where}: field 'calls[{i}]'")
        if reply is None and i == len(calls) - 1 and rec.get("status") == "ok":
            reply = Reply(rec.get("raw_output") or "", rec.get("finish_reason") or "stop", 0, 0, 0.0,
                          thinking=bool(rec.get("thinking")))
        return reply

    return derived, session.run(question, call_model)


def _call_findings(rec: dict[str, Any], arm: ArmSpec, calls: list, derived: list[str] | None, finished: bool,
                   answer: str | None) -> list[tuple[str, str]]:
    """(field, message): the recorded call keys against those re-derived from the requests (`derived`, None when
    they could not be), their number against the calls the answer makes, and a glue arm's final answer (`answer`,
    the glue's on the recorded replies when it `finished`) against the row's text."""
    if derived is None:
        return []
    source = ("the glue run again on this row's question and recorded replies" if arm.glue else
              "the question under the arm's registered settings")
    for i, (stored, key) in enumerate(zip(calls, derived, strict=False)):
        if stored != key:
            return [(f"calls[{i}]", f"reads {str(stored)[:12]}…, but the request re-derived from {source} and the "
                     f"row's identity has key {key[:12]}…")]
    ok = rec.get("status") == "ok"
    if finished and (len(calls) != len(derived) if ok else len(calls) >= len(derived)):
        return [("calls", f"holds {len(calls)} call key(s), but {source} makes {len(derived)}"
                 + ("" if ok else ", the last of which failed"))]
    if arm.glue and finished and ok and answer != rec.get("text"):
        return [("text", f"reads {rec.get('text')!r}, but glue {arm.glue!r} run again on this row's question and "
                 f"recorded replies answers {answer!r}")]
    return []


def answer_rows(path: Path, run: dict[str, Any], exp: Experiment, questions: dict[str, Question],
                replies: Replies) -> tuple[list[str], list[str]]:
    """Each answer record (superseded error records too) against the registration, its call keys re-derived
    from its request (a glue arm's by its glue, run again in one child process per glue), its calls and reply
    against the call cache. Returns findings and what was not checked."""
    sessions: dict[tuple[str, float], GlueSession] = {}
    try:
        return _answer_rows(path, run, exp, questions, replies, sessions)
    finally:
        for session in sessions.values():
            session.close()


def _answer_rows(path: Path, run: dict[str, Any], exp: Experiment, questions: dict[str, Question],
                 replies: Replies, sessions: dict[tuple[str, float], GlueSession]) -> tuple[list[str], list[str]]:
    out: list[str] = []
    glue_skipped: dict[str, list] = {}  # glue -> [how it stopped, answer records it was not run again on]
    arms = {a.name: a for a in exp.arms}
    registered = {a.name: a.generation.to_dict() for a in exp.arms}
    no_identity, glue_unchecked, glue_unloadable, unknown = 0, 0, {}, set()
    for no, rec in jsonl.read(path):
        def finding(field: str, message: str, no: int = no) -> None:
            out.append(f"{path}:{no}: field {field!r}: {message}")

        arm = arms.get(rec.get("arm"))
        if arm is None:
            finding("arm", f"{rec.get('arm')!r} is not an arm of the registration ({', '.join(arms)})")
            continue
        quant, sample = rec.get("quant"), rec.get("sample")
        if quant not in arm.quants:
            finding("quant", f"{quant!r} is not a registered quant of arm {arm.name!r} ({', '.join(arm.quants)})")
        if not (type(sample) is int and 0 <= sample < arm.samples):
            finding("sample", f"{sample!r} is not one of the {arm.samples} registered sample(s) of arm {arm.name!r}")
            continue
        if rec.get("row") != row_id(arm.name, quant, rec.get("question_id"), sample):
            finding("row", f"{rec.get('row')!r} is not the id of ({arm.name}, {quant}, {rec.get('question_id')}, "
                    f"sample {sample})")
        seed = None if arm.generation.seed is None else arm.generation.seed + sample
        want = {**registered[arm.name], "seed": seed}
        got = rec.get("settings") or {}
        for key in sorted(set(want) | set(got), key=str):
            if want.get(key) != got.get(key):
                finding(f"settings.{key}", f"reads {got.get(key)!r}, but arm {arm.name!r} is registered with "
                        f"{want.get(key)!r}")
        model = exp.models[arm.model]
        adapters = tuple(exp.adapters[a] for a in arm.adapters)
        eff = rec.get("effective")
        if eff:
            try:
                diffs = differences(replace(arm.generation, seed=seed), quant, model, adapters, exp.runtime, eff,
                                    eff.get("sent") or {})
            except (KeyError, TypeError) as e:
                diffs = [f"the read-back settings lack {e} to compare with the registration"]
            for d in diffs:
                finding("effective", f"differs from the registration of arm {arm.name!r} at {quant}: {d}")
            if "model_sha256" in eff and rec.get("model_sha256") != eff["model_sha256"]:
                finding("model_sha256", f"reads {rec.get('model_sha256')!r}, but the model file read back for this "
                        f"row (field 'effective') is {eff['model_sha256']!r}")
            qf = (run.get("quant_files") or {}).get(f"{arm.model}/{quant}")
            if qf and qf.get("sha256") and rec.get("model_sha256") != qf["sha256"]:
                finding("model_sha256", f"reads {rec.get('model_sha256')!r}, but run.json records the file of "
                        f"{arm.model}/{quant} as {qf['sha256']!r}")
        calls = rec.get("calls") or []
        ident = rec.get("identity")
        question = questions.get(rec.get("question_id"))
        if question is None:
            finding("question_id", f"{rec.get('question_id')!r} is not a question of the registered sets")
        elif ident is None:
            no_identity += 1
        elif not isinstance(ident, dict):
            finding("identity", f"reads {ident!r}, not a backend identity")
        else:
            found = identity_findings(ident, model, quant, adapters, exp.runtime, eff or {"model_sha256":
                                                                                          rec.get("model_sha256")})
            if found is None:
                unknown.add(model.backend)
            for field, message in found or []:
                finding(field, f"{message} (arm {arm.name!r} at {quant})")
            if arm.glue:
                derived, answer, finished, session = None, None, False, None
                run_as = (arm.glue, arm.glue_timeout_s)
                try:
                    if arm.glue not in glue_unloadable:
                        session = sessions.get(run_as) or sessions.setdefault(
                            run_as, GlueSession(arm.glue, exp.dir, arm.glue_timeout_s))
                except BadInput as e:  # the glue cannot be imported on this machine
                    glue_unloadable[arm.glue] = str(e)
                outcome = None if session is None else _glue_calls(session, arm, quant, question, sample, ident, rec,
                                                                   replies, f"{path}:{no}")
                if outcome is not None:
                    derived, how = outcome
                    finished, answer = how.kind == "answer", how.value if how.kind == "answer" else None
                    if how.kind in ("raised", "stopped"):  # on the recorded replies the glue raised, exited or hung
                        finding("calls", f"glue {arm.glue!r} {'raised ' if how.kind == 'raised' else ''}{how.value} "
                                "when run again on this row's question and recorded replies")
                        derived = None
                    elif how.kind == "skipped":
                        glue_skipped.setdefault(arm.glue, [how.value, 0])[1] += 1
                        derived = None
                if derived is not None and not finished:
                    glue_unchecked += max(0, len(calls) - len(derived))
            else:
                derived = [call_key(ident, task_request(Task(arm, quant, question, sample),
                                                        plain_messages(arm, question)))]
                finished, answer = True, rec.get("raw_output")
            for field, message in _call_findings(rec, arm, calls, derived, finished, answer):
                finding(field, message)
        if rec.get("status") != "ok":
            for i, key in enumerate(calls):
                replies.get(key, f"{path}:{no}: field 'calls[{i}]'")
            continue
        if not arm.glue and rec.get("text") != rec.get("raw_output"):
            finding("text", f"arm {arm.name!r} has no glue, so its answer is the model's reply, but the text "
                    "differs from the reply recorded in field 'raw_output'")
        reply = None
        for i, key in enumerate(calls):
            reply = replies.get(key, f"{path}:{no}: field 'calls[{i}]'")
        if calls and reply is not None and reply.text != rec.get("raw_output"):
            finding("raw_output", f"differs from the model's reply held in the call cache under this row's last "
                    f"call {calls[-1][:12]}…")
    unchecked = []
    if no_identity:
        unchecked.append(f"{path}: {no_identity} answer record(s) carry no backend identity (written before rows "
                         "recorded it): their call keys were not re-derived from their requests")
    if glue_unchecked:
        unchecked.append(f"{path}: {glue_unchecked} glue call key(s) were not re-derived: the reply of an earlier call "
                         "of the same answer is in no call cache consulted")
    unchecked += [f"{path}: the identity of backend {b!r} in answer records is not one verify knows: not compared "
                  "with the registration" for b in sorted(unknown)]
    for glue, why in glue_unloadable.items():
        unchecked.append(f"{path}: glue {glue!r} cannot be loaded here ({why}): its answers' call keys and texts were "
                         "not re-derived")
    for glue, (why, rows) in glue_skipped.items():
        unchecked.append(f"{path}: glue {glue!r} was not run again on {rows} later answer record(s): it {why} on an "
                         "earlier one (above); their call keys and texts were not re-derived")
    return out, unchecked
