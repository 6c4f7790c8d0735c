"""Answer-first rubrics: the judge writes its own answer to a question before it reads a candidate's.

A rubric registers `answer_first` (registration.rubric.ANSWER_FIRST) in one of two forms:

- `two_calls`: a first call shows the judge the question (and the reference, when the rubric's template shows it
  one) and never a candidate; its reply, the judge's own answer, opens the grading prompt of every candidate of that
  question, marked as written before the candidate was seen. The first call depends on the question, the rubric and
  the judge only, so it is one call per question and judge (the call cache answers every later candidate), however
  many arms, quants and samples answered it, and blind by construction: nothing in it names or shows an arm.
- `one_reply`: the verdict's schema opens with a `judge_answer` field, so the judge writes its answer before its
  grade in the same structured reply. One call, but the judge has the candidate in view while it answers.

The judgment records the judge's answer (`judge_answer`); verify re-derives the first call's key from the question
and checks the recorded answer against the reply the call cache holds, then re-renders the grading prompt with it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import Any

from jinja2 import Environment, meta

from arms.settings import check_reply
from models import call_loop
from models.backends.base import Backend, Request
from models.cache import CallCache, call_key
from registration.rubric import JUDGE_ANSWER, Rubric

from .blinding import scrub

FIRST_SYSTEM = ("Answer the question below yourself, correctly and concisely. Your answer is kept and shown to you "
                "later, when you grade other answers to the same question.")
SHOWN = "Your own answer to this question, written before you saw the candidate:\n<<<\n{}\n>>>\n\n"


@lru_cache(maxsize=32)
def shows_reference(template: str) -> bool:
    """Whether the rubric's template shows the judge the reference: the first call shows it then, and only then."""
    return "reference" in meta.find_undeclared_variables(Environment().parse(template))


def first_request(rubric: Rubric, question: str, reference: str | None) -> Request:
    """The first call of a `two_calls` rubric: the question (and the reference the rubric shows), never a candidate;
    the rubric's generation settings with its own max_tokens (`answer_max_tokens`: an answer, not a verdict)."""
    user = f"Question:\n<<<\n{question}\n>>>"
    if reference is not None and shows_reference(rubric.template):
        user += f"\n\nReference answer:\n<<<\n{reference}\n>>>"
    return Request((("system", FIRST_SYSTEM), ("user", user)),
                   replace(rubric.generation, max_tokens=rubric.answer_max_tokens))


def room(rubric: Rubric) -> int:
    """The tokens a grading prompt keeps for the judge's own answer it opens with: a `two_calls` rubric's
    answer_max_tokens (the first call's reply is no longer), 0 for any other rubric."""
    return rubric.answer_max_tokens if rubric.answer_first == "two_calls" else 0


def shown(text: str) -> str:
    """The judge's answer as its grading prompt opens with it: normalised and its `<<<`/`>>>` markers neutralised
    like a candidate's (judge.judging.blinding.scrub, no identity patterns: it names no arm)."""
    return SHOWN.format(scrub(text, ())[0])


@dataclass(frozen=True)
class JudgeAnswer:
    """A judgment's `judge_answer` (core.records.Judgment): the judge's own answer, written before it graded."""

    form: str  # one of registration.rubric.ANSWER_FIRST
    text: str
    call: str | None  # two_calls: the key of the first call (one per question and judge); one_reply: None
    cached: bool  # two_calls: the call cache answered it (another verdict of the question paid for it)
    prompt_tokens: int  # two_calls: the first call's tokens, counted once per call (judge.judging.cost); one_reply: 0
    completion_tokens: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class OwnAnswer:
    """The reply of a `two_calls` rubric's first call, as the judgment records it."""

    text: str
    call: str  # its call key
    cached: bool
    prompt_tokens: int
    completion_tokens: int

    def recorded(self) -> dict[str, Any]:
        return JudgeAnswer("two_calls", self.text, self.call, self.cached, self.prompt_tokens,
                           self.completion_tokens).to_dict()


def ask(backend: Backend, cache: CallCache, rubric: Rubric, question: str, reference: str | None) -> OwnAnswer:
    """The judge's own answer to a question, through the call cache (a call failure propagates: the caller records
    the verdict as an error, asked again by the next run)."""
    request = first_request(rubric, question, reference)
    reply, key, cached = call_loop.cached_call(backend, cache, request)
    check_reply("judge (its own answer)", request.generation, reply)
    return OwnAnswer(reply.text, key, bool(cached), reply.prompt_tokens, reply.completion_tokens)


def one_reply(rubric: Rubric, fields: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a `one_reply` rubric's verdict records as the judge's answer: its `judge_answer` field."""
    if rubric.answer_first != "one_reply" or fields is None:
        return None
    return JudgeAnswer("one_reply", fields[JUDGE_ANSWER], None, False, 0, 0).to_dict()


def check(j: dict[str, Any], rubric: Rubric, question: str, reference: str | None, identity: Any, replies: Any,
          where: str, fields: dict[str, Any] | None) -> tuple[str | None, list[tuple[str, str]]]:
    """(the judge's answer the grading prompt showed, findings (field, message)) for judgment `j` recorded at
    `where` (file:line) under `rubric`: its recorded answer against the rubric's form; of a `two_calls` rubric, the
    first call's key re-derived from the question and the judge's identity, and the answer against the reply the
    call cache holds (`replies`: judge.verify.replies.Replies). `fields`: the verdict's fields re-parsed from its raw
    reply."""
    own = j.get("judge_answer")
    form = rubric.answer_first
    if not form:
        return None, ([] if own is None else [("judge_answer", f"holds a judge's own answer, but rubric {rubric.name} "
                                                "does not ask for one")])
    if form == "one_reply":
        want = one_reply(rubric, fields)
        return None, ([] if own == want else [("judge_answer", f"reads {_short(own)}, but the verdict's re-parsed "
                                                f"field {JUDGE_ANSWER!r} gives {_short(want)}")])
    if own is None:  # a first call that failed records no answer: the verdict is an error, asked again
        return None, ([] if j.get("status") == "error" else
                      [("judge_answer", f"missing: rubric {rubric.name} asks the judge for its own answer first "
                        "(answer_first = \"two_calls\")")])
    if not (isinstance(own, dict) and set(own) == set(JudgeAnswer.__dataclass_fields__)
            and own["form"] == "two_calls" and isinstance(own["text"], str) and isinstance(own["call"], str)
            and all(type(own[k]) is int for k in ("prompt_tokens", "completion_tokens"))):
        return None, [("judge_answer", f"reads {_short(own)}: not a two_calls answer ("
                       f"{', '.join(JudgeAnswer.__dataclass_fields__)})")]
    out = []
    if isinstance(identity, dict):
        key = call_key(identity, first_request(rubric, question, reference))
        if own["call"] != key:
            out.append(("judge_answer.call", f"reads {own['call'][:12]}…, but the first call re-derived from the "
                        f"question, rubric {rubric.name} and the judge's identity in run.json has key {key[:12]}…"))
    reply = replies.get(own["call"], f"{where}: field 'judge_answer.call'")
    if reply is not None and reply.text != own["text"]:
        out.append(("judge_answer.text", f"differs from the judge's own answer held in the call cache under "
                    f"judge_answer.call {own['call'][:12]}…"))
    for field in ("prompt_tokens", "completion_tokens"):  # what the cost counts
        if reply is not None and own[field] != getattr(reply, field):
            out.append((f"judge_answer.{field}", f"reads {own[field]}, but the reply held in the call cache under "
                        f"judge_answer.call used {getattr(reply, field)}"))
    return own["text"], out


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "…"
