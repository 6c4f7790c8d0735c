"""What a run that can cost money plans to pay, before its first call, and the ceiling no call may cross.

The plan counts, per arm and judge, the calls the run asks (every arm's quants x questions x samples; a glue's
further calls are not known before it runs, so an arm's first call per question is counted), their input tokens
and their largest output (the registered max_tokens). Input tokens are counted with the model's own tokenizer and
chat template where the harness has it (a GGUF run in process); for a model behind an API they are bounded: one
token per UTF-8 byte of the messages (a byte-level BPE token is at least one byte) plus OVERHEAD tokens per
message for the chat template's markers. A judge's prompt holds the answers, unknown before they are written: each
is counted at its arm's max_tokens. An answer-first judge (`two_calls`) adds one first call per question (its
output at the rubric's answer_max_tokens), and each of its grading prompts holds that answer, counted at
answer_max_tokens too. A verdict that does not parse is asked again (up to [judge] verdict_attempts): those calls
are not planned. So the plan is an estimate of what the run pays when every call runs to max_tokens.

What is spent is measured: the tokens each reply reports, at the registered prices. The ceiling (`--max-cost`, or
`[runtime] max_cost_usd`) bounds the results folder's cost as run.json's `cost` counts it: the folder's rows when
the run starts, plus every call paid since. Before a call is sent, its bound (input as above, output at
max_tokens, at the prices) is reserved; a call whose bound would take the spent and reserved past the ceiling is
not sent and the run stops (OverBudget, exit 1). Every call paid is in the call cache and every finished row in
the folder, so a resume with a higher ceiling pays nothing twice.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Callable

from arms.collect import plain_messages
from arms.context import counter, first_prompt
from core.errors import CheckFailed
from models.backends.base import Reply, Request
from models.backends.registry import backend_info
from models.spec import ModelSpec
from registration.prereg import Experiment, JudgeSpec
from registration.questions import Question
from registration.rubric import Rubric

from . import answer_first
from .blinding import BlindItem
from .calls import build_request
from .pairwise import PairItem

OVERHEAD = 8  # tokens per message for a chat template's role markers, in the bound of an API model's input
APPROXIMATION = f"at most one token per UTF-8 byte + {OVERHEAD} per message"


class OverBudget(CheckFailed):
    """The next call could take the results folder's cost past the registered or given ceiling."""


def bound_tokens(messages: list[tuple[str, str]]) -> int:
    """An upper bound on the input tokens of `messages` for a model whose tokenizer the harness does not have."""
    return sum(len(text.encode()) + OVERHEAD for _, text in messages)


def usd(model: ModelSpec, input_tokens: int, output_tokens: int) -> float | None:
    if model.price_input is None or model.price_output is None:
        return None
    return (input_tokens * model.price_input + output_tokens * model.price_output) / 1e6


def can_cost(exp: Experiment, arms: list[str], panel: list[JudgeSpec]) -> bool:
    """A model of the run is reached over HTTP (an API, or a server whose owner may bill it) or has prices."""
    models = [exp.models[exp.arm(a).model] for a in arms] + [exp.models[j.model] for j in panel]
    return any(not backend_info(m.backend).local or m.price_input is not None for m in models)


def planned_calls(exp: Experiment, arms: list[str], questions: list[Question], panel: list[JudgeSpec],
         rubrics: dict[tuple[str, str], Rubric], mode: str) -> dict[str, Any]:
    """The run's planned calls per arm and judge, their input tokens, their largest output and its cost."""
    lines = []
    specs = [exp.arm(a) for a in arms]
    for arm in specs:
        model = exp.models[arm.model]
        count = counter(model, exp.dir)
        per = [first_prompt(arm, q, exp.dir) if arm.glue else plain_messages(arm, q) for q in questions]
        tokens = sum(_count(count, m, arm.generation.thinking) for m in per if m is not None)
        n = len(arm.quants) * arm.samples
        lines.append(_line("arm", arm.name, model, n * sum(m is not None for m in per), n * tokens,
                           n * sum(m is not None for m in per) * arm.generation.max_tokens, count))
    hyps = [h for h in exp.hypotheses if h.a in arms and h.b in arms]
    answers = {a.name: a.generation.max_tokens for a in specs}
    single = [(q, answers[a.name]) for a in specs for q in questions for _ in range(len(a.quants) * a.samples)]
    pairs = [(q, answers[h.a] + answers[h.b]) for h in hyps for q in questions for _ in range(2)]
    for j in panel:
        model = exp.models[j.model]
        count = counter(model, exp.dir)
        calls = tokens = output = 0
        firsts: set[Request] = set()
        for kind, todo in (("single", single if mode != "pairwise" else []),
                           ("pairwise", pairs if mode != "single" else [])):
            rubric = rubrics.get((j.name, kind))
            if rubric is None or not todo:
                continue
            todo = todo + (todo[:exp.judge_retest] if kind == "single" else [])  # the retest's draw
            own = answer_first.room(rubric)
            empty: dict[str, int] = {}
            for q, answer in todo:
                if q.id not in empty:
                    request = build_request(rubric, _empty(kind, q), 0, own_answer="" if own else None)
                    empty[q.id] = _count(count, list(request.messages), rubric.generation.thinking)
                tokens += empty[q.id] + own + answer
            calls += len(todo)
            output += len(todo) * rubric.generation.max_tokens
            if rubric.answer_first == "two_calls":  # one first call per question, whatever arm, sample or retest
                for q in dict.fromkeys(q for q, _ in todo):
                    request = answer_first.first_request(rubric, q.question, q.reference)
                    if request not in firsts:  # a single and a pairwise rubric may ask the same first call
                        firsts.add(request)
                        calls += 1
                        tokens += _count(count, list(request.messages), request.generation.thinking)
                        output += request.generation.max_tokens
        lines.append(_line("judge", j.name, model, calls, tokens, output, count))
    total = [x["usd"] for x in lines]
    return {"lines": lines, "usd": None if None in total else sum(total),
            "input_tokens": "counted with the model's tokenizer where marked, else " + APPROXIMATION
                            + "; a judge's answers at their arms' max_tokens (its own, at the rubric's "
                            "answer_max_tokens)",
            "output_tokens": "every call at its registered max_tokens"}


def _line(role: str, name: str, model: ModelSpec, calls: int, tokens: int, output: int, count) -> dict[str, Any]:
    return {"role": role, "name": name, "model": model.name, "calls": calls, "input_tokens": tokens,
            "max_output_tokens": output, "tokenizer": count is not None, "price_input": model.price_input,
            "price_output": model.price_output, "usd": usd(model, tokens, output)}


def _count(count, messages: list[tuple[str, str]], thinking: bool) -> int:
    return count(messages, thinking) if count is not None else bound_tokens(messages)


def _empty(kind: str, q: Question) -> BlindItem | PairItem:
    if kind == "single":
        return BlindItem("L", q.id, q.question, q.reference, "")
    return PairItem("L", q.id, q.question, q.reference, "", "")


def plan_text(p: dict[str, Any], ceiling: float | None) -> str:
    """The plan as printed before the first call."""
    out = ["Planned calls before paying (an estimate: " + p["input_tokens"] + "; " + p["output_tokens"] + "):"]
    for x in p["lines"]:
        cost = f"${x['usd']:.4f}" if x["usd"] is not None else "no price registered"
        out.append(f"  {x['role']} {x['name']} (model {x['model']}): {x['calls']} call(s), {x['input_tokens']} input "
                   f"tokens{'' if x['tokenizer'] else ' (bound)'}, at most {x['max_output_tokens']} output tokens: "
                   f"{cost}")
    total = f"${p['usd']:.4f}" if p["usd"] is not None else "unknown (a model of the run has no registered price)"
    out.append(f"  at most {total} in all; ceiling: " + (f"${ceiling:.4f}" if ceiling is not None else "none"))
    return "\n".join(out)


@dataclass
class Budget:
    """The ceiling's guard, installed on the call cache (`CallCache.guard`): asked before every call not answered
    from the cache, with that call's backend identity and request; it returns what to do with the reply."""

    ceiling: float
    spent: float  # the folder's cost when the run started, plus every call paid since (measured)
    models: list[ModelSpec]  # the run's models: a call's prices are those of the model its identity names
    exp_dir: Any
    resume: str  # the command that resumes the run, without its ceiling
    planned: float | None = None

    def __post_init__(self):
        self._lock = threading.Lock()
        self._reserved = 0.0
        self._counters: dict[str, Any] = {}

    def prices(self, identity: dict[str, Any]) -> ModelSpec | None:
        """The dearest model of the run that this identity can be (a model reached over HTTP is named by its
        backend and source); None for an in-process model without prices."""
        named = [m for m in self.models if m.price_input is not None and m.backend == identity.get("backend")
                 and m.source == identity.get("model")]
        return max(named, key=lambda m: (m.price_input, m.price_output), default=None)

    def __call__(self, identity: dict[str, Any], request: Request) -> Callable[[Reply | None], None]:
        model = self.prices(identity)
        if model is None:
            return lambda reply: None
        if model.name not in self._counters:  # a local model's template is compiled once, not per call
            self._counters[model.name] = counter(model, self.exp_dir)
        count = self._counters[model.name]
        bound = usd(model, _count(count, list(request.messages), request.generation.thinking),
                    request.generation.max_tokens)
        with self._lock:
            if self.spent + self._reserved + bound > self.ceiling:
                raise OverBudget(self.stop_message(model, bound))
            self._reserved += bound

        def settle(reply: Reply | None) -> None:
            with self._lock:
                self._reserved -= bound
                if reply is not None:
                    self.spent += usd(model, reply.prompt_tokens, reply.completion_tokens)
        return settle

    def stop_message(self, model: ModelSpec, bound: float) -> str:
        left = self.ceiling - self.spent - self._reserved
        higher = max(self.planned or 0.0, self.spent + bound)
        return (f"cost ceiling: the next call to model {model.name!r} may cost up to ${bound:.4f} (its input bound "
                f"and max_tokens at the registered prices), and only ${left:.4f} of the ${self.ceiling:.4f} ceiling "
                f"is left: spent ${self.spent:.4f} (measured: the folder's rows and the calls of this run, at the "
                f"registered prices). Nothing more was sent; every call paid is kept (the call cache and the "
                f"folder's rows) and is not paid again. The whole run was estimated at up to "
                + (f"${self.planned:.4f}" if self.planned is not None else "an unknown cost")
                + f". Resume with a higher ceiling: {self.resume} --max-cost {_up(higher)}")


def _up(x: float) -> str:
    """`x` rounded up to a whole cent (at least one)."""
    return f"{max(1, math.ceil(x * 100 - 1e-9)) / 100:.2f}"
