"""What the results cost: tokens per arm and judge, and USD where the model's prices are registered.

Counted from the current rows (answers.jsonl, judgments.jsonl; an error row a retry replaced is not
counted), with the tokens each row records for all its calls, those answered from the call cache
included: the cost of the results, not of one invocation. A row all of whose calls a provider batch
answered (batches.jsonl, models.provider_batch) is priced at half the registered prices, as OpenAI's Batch API
and Anthropic's Message Batches bill batched requests at 50% of the synchronous price.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from core.jsonl import current
from core.records import ANSWER_KEY, JUDGMENT_KEY, AnswerRow, Judgment
from models.provider_batch import LOG, batched_keys

BATCH_RATE = 0.5  # both providers' published batch discount: half the synchronous price, input and output


def cost_line(role: str, name: str, model, rows: list, batched: set[str]) -> dict[str, Any]:
    """One arm's or judge's tokens (all rows, and those answered by a batch) and, with registered prices, USD."""
    tokens = {"input": 0, "output": 0, "batch_input": 0, "batch_output": 0}
    for r in rows:
        by_batch = bool(r.calls) and set(r.calls) <= batched
        tokens["input"] += r.prompt_tokens
        tokens["output"] += r.completion_tokens
        if by_batch:
            tokens["batch_input"] += r.prompt_tokens
            tokens["batch_output"] += r.completion_tokens
    # an answer-first judge's own answers (judge.judging.answer_first, two_calls): one call per question, shared by
    # every verdict of that question, counted once
    own = {a["call"]: a for r in rows if isinstance(a := getattr(r, "judge_answer", None), dict)
           and isinstance(a.get("call"), str)}
    for key, a in own.items():
        used = [n if type(n := a.get(k)) is int else 0 for k in ("prompt_tokens", "completion_tokens")]
        tokens["input"] += used[0]
        tokens["output"] += used[1]
        if key in batched:
            tokens["batch_input"] += used[0]
            tokens["batch_output"] += used[1]
    usd = None
    if model.price_input is not None and model.price_output is not None:
        full_in, full_out = tokens["input"] - tokens["batch_input"], tokens["output"] - tokens["batch_output"]
        usd = (full_in * model.price_input + full_out * model.price_output
               + BATCH_RATE * (tokens["batch_input"] * model.price_input
                               + tokens["batch_output"] * model.price_output)) / 1e6
    return {"role": role, "name": name, "model": model.name, "rows": len(rows), **{f"{k}_tokens": v for k, v in
                                                                                 tokens.items()},
            "price_input": model.price_input, "price_output": model.price_output, "usd": usd}


def costs(exp, arms: list[str], judges: list[str], question_ids: set[str], run_dir: Path) -> list[dict]:
    """A cost line per arm of the run (its answers to the run's questions) and per judge of the panel, from the
    raw files of `run_dir`."""
    answers = [c.record for c in current(run_dir / "answers.jsonl", ANSWER_KEY, make=AnswerRow.from_dict).values()
               if c.record.question_id in question_ids]
    judgments = [c.record for c in current(run_dir / "judgments.jsonl", JUDGMENT_KEY,
                                           make=Judgment.from_dict).values()]
    batched = batched_keys(run_dir / LOG)
    judge_models = {j.name: j.model for j in exp.judges}
    out = [cost_line("arm", a, exp.models[exp.arm(a).model], [r for r in answers if r.arm == a], batched)
           for a in arms]
    out += [cost_line("judge", j, exp.models[judge_models[j]], [r for r in judgments if r.judge == j], batched)
            for j in judges]
    return out
