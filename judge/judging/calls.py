"""Judge calls: render the rubric for a blinded item, ask for a structured verdict, parse, record.

The judge sees only BlindItems. Structured output is requested on every backend (llama.cpp JSON
schema grammar, OpenAI json_schema, Anthropic forced tool use); a verdict that still does not
parse after the registered number of attempts is `unscored`, kept with its raw text. A verdict
whose call failed (`error`) is judged again by the next run and appended with `retry_of` (the
retry rule in core.jsonl); `scored` and `unscored` verdicts are final.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import replace
from functools import partial
from pathlib import Path

from tqdm import tqdm

from arms.settings import check_reply
from core import jsonl
from core.records import JUDGMENT_KEY, RETEST_KEY, Judgment, Retest
from models import call_loop, provider_batch
from models.backends.base import Backend, Request
from models.backends.registry import backend_info
from models.cache import CallCache, call_key
from models.retry import describe, is_call_failure
from registration.rubric import Rubric

from . import answer_first
from .blinding import BlindItem

RETESTS = "retests.jsonl"  # a results folder's verdicts asked again ([judge] retest); absent when none registered


def build_request(rubric: Rubric, item: BlindItem, attempt: int, retest: int = 0, attempts: int = 1,
                  own_answer: str | None = None) -> Request:
    """Shared rubric and question first, the answer last: prefix caches reuse the common part.

    `attempt` counts from 0. Each attempt is its own call (Request.attempt), so a retry reaches the
    judge even when the seed is the provider's default and nothing else in the request changes. A retest
    (`retest` >= 1, of a verdict registered with `attempts` attempts) is a call of its own too (Request.retest), and
    its seed moves past every seed the verdict's attempts used (seed + retest x attempts + attempt): at a temperature
    above 0 it is a fresh draw from the registered sampling; greedy decoding ignores the seed. `own_answer`: the
    judge's own answer (judge.judging.answer_first, `two_calls`), shown before the rubric's prompt."""
    user = rubric.render(**item.prompt_fields())
    if own_answer is not None:
        user = answer_first.shown(own_answer) + user
    seed = rubric.generation.seed
    gen = replace(rubric.generation, seed=None if seed is None else seed + retest * attempts + attempt)
    return Request((("system", rubric.system), ("user", user)), gen, schema=rubric.schema_text, attempt=attempt + 1,
                   retest=retest)


def retest_labels(labels: list[str], n: int, seed: int, judge: str) -> list[str]:
    """The labels `[judge] retest = n` asks judge `judge` again: the n whose sha256 of (seed, judge, label) is
    smallest, in that order (all when fewer). A seeded draw anyone can repeat from the labels, and stable when a
    folder is extended: a label drawn stays drawn unless n labels with smaller hashes join it."""
    def rank(label: str) -> str:
        return hashlib.sha256(f"retest\x1f{seed}\x1f{judge}\x1f{label}".encode()).hexdigest()

    return sorted(dict.fromkeys(labels), key=rank)[:n]


def prompt_sha256(request: Request) -> str:
    blob = json.dumps([list(m) for m in request.messages], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def judge_item(name: str, backend: Backend, rubric: Rubric, item: BlindItem, cache: CallCache,
               max_attempts: int, retest: int = 0) -> Judgment:
    """One verdict: a Judgment, or with `retest` >= 1 a Retest (the same verdict asked again)."""
    from .verdict import parse_verdict

    record = partial(Retest, retest=retest) if retest else Judgment
    own = None
    if rubric.answer_first == "two_calls":  # its own answer first, from a call that never shows the candidate
        try:
            own = answer_first.ask(backend, cache, rubric, item.question, item.reference)
        except Exception as e:
            if not is_call_failure(e):
                raise
            return record(name, item.label, item.question_id, "error", None, None, False,
                          f"the judge's own answer call failed: {describe(e)['message']}",
                          prompt_sha256(build_request(rubric, item, 0)), [{"raw": None, "error": describe(e)}], 0.0,
                          0, 0, 0, rubric=rubric.name, kind=item.kind)
        record = partial(record, judge_answer=own.recorded())
    attempts, keys, cached = [], [], 0
    tokens = [0, 0, 0]
    latency = 0.0
    first_sha = None
    for attempt in range(max_attempts):
        request = build_request(rubric, item, attempt, retest, max_attempts, None if own is None else own.text)
        first_sha = first_sha or prompt_sha256(request)
        try:
            reply, key, from_cache = call_loop.cached_call(backend, cache, request)
            cached += from_cache
        except Exception as e:  # the call failed after its retries: an error row, not a score
            if not is_call_failure(e):
                raise
            attempts.append({"raw": None, "error": describe(e)})
            return record(name, item.label, item.question_id, "error", None, None, False,
                            f"judge call failed: {describe(e)['message']}", first_sha, attempts,
                            round(latency, 4), *tokens, calls=keys, cached_calls=cached, rubric=rubric.name,
                            kind=item.kind)
        keys.append(key)
        latency += reply.latency_s
        tokens = [tokens[0] + reply.prompt_tokens, tokens[1] + reply.completion_tokens,
                  tokens[2] + reply.cached_tokens]
        check_reply(f"judge {name!r}", request.generation, reply)
        parsed = parse_verdict(reply.text, rubric.schema)
        attempts.append({"raw": reply.text, "finish_reason": reply.finish_reason, "error": parsed.error,
                         "repaired": parsed.repaired})
        if parsed.ok:
            if rubric.answer_first == "one_reply":
                record = partial(record, judge_answer=answer_first.one_reply(rubric, parsed.fields))
            return record(name, item.label, item.question_id, "scored", int(parsed.fields[rubric.score_field]),
                            parsed.fields, parsed.repaired, None, first_sha, attempts, round(latency, 4), *tokens,
                            calls=keys, cached_calls=cached, rubric=rubric.name, kind=item.kind)
    return record(name, item.label, item.question_id, "unscored", None, None, False, attempts[-1]["error"],
                    first_sha, attempts, round(latency, 4), *tokens, calls=keys, cached_calls=cached,
                    rubric=rubric.name, kind=item.kind)


def provider_batch_rounds(backend: Backend, rubric: Rubric, items: list[BlindItem], cache: CallCache, max_attempts: int,
                          how: provider_batch.ProviderBatching, progress: bool,
                          retest: int = 0) -> provider_batch.Answered:
    """Every judge call `judge_item` will make, through the provider's batch API: round n asks attempt n of the
    items whose attempt n-1 (from the cache or the previous round) did not parse."""
    from .verdict import parse_verdict

    answered = provider_batch.Answered(backend)
    ident = backend.identity()
    live = list(items)
    own: dict[str, str] = {}  # label -> the judge's own answer (answer_first = "two_calls"): asked in a round first
    if rubric.answer_first == "two_calls":
        firsts = {i.label: answer_first.first_request(rubric, i.question, i.reference) for i in live}
        keyed = {i.label: call_key(ident, firsts[i.label]) for i in live}
        answered.add(provider_batch.fill(backend, {keyed[label]: r for label, r in firsts.items()
                                                   if cache.get(keyed[label]) is None}, how, progress))
        for item in live:
            reply = cache.get(keyed[item.label]) or answered.reply(keyed[item.label])
            if reply is not None:
                own[item.label] = reply.text
        live = [i for i in live if i.label in own]  # a failed first call: the verdict is an error row
    for attempt in range(max_attempts):
        keys, requests = {}, {}
        for item in live:
            request = build_request(rubric, item, attempt, retest, max_attempts, own.get(item.label))
            keys[item.label] = call_key(ident, request)
            requests[keys[item.label]] = request
        replies = {k: cache.get(k) for k in requests}
        answered.add(provider_batch.fill(backend, {k: r for k, r in requests.items() if replies[k] is None}, how,
                                         progress))
        unparsed = []
        for item in live:  # a failed call has no reply: its verdict is an error row, not asked again
            reply = replies[keys[item.label]] or answered.reply(keys[item.label])
            if reply is not None and not parse_verdict(reply.text, rubric.schema).ok:
                unparsed.append(item)
        live = unparsed
    return answered


def judge_all(name: str, backend: Backend, rubric: Rubric, items: list[BlindItem], cache: CallCache, out: Path,
              max_attempts: int = 2, progress: bool = True, concurrency: int = 1, parallel_sequences: int = 1,
              provider_batching: provider_batch.ProviderBatching | None = None, retest: int = 0) -> dict:
    """Judge every item not yet in `out` or whose verdict is an `error`, up to `concurrency` calls in flight
    (HTTP judges; llama.cpp: the registered `[runtime] parallel_sequences`, decoded together). A retried
    verdict is appended with `retry_of` = the error record's line.

    Records are written by this thread only, in judging order (models.call_loop, the loop answers go through
    too), so the file stays one record per line and a kill leaves a prefix. Items with the same
    judge prompt (two arms gave the same answer) are judged by one worker one after the other, so
    the second is a cache hit instead of a second paid call racing the first. The first item is judged
    alone before any other is sent, so a server that refuses every call (core.errors.Refused) stops
    the run after one call, not after one per worker. With `provider_batching` (a model registered with
    `provider_batch = true`), the calls go through the provider's batch API first (`provider_batch_rounds`), and the
    same loop then writes the verdicts from the batches' results. With `retest` >= 1 the items are asked again as
    retest number `retest` (`out` is then retests.jsonl, keyed by judge, label and retest), each a call of its own.
    """
    resume = call_loop.Resume.of(out, RETEST_KEY if retest else JUDGMENT_KEY)
    todo = [i for i in items if resume.wanted((name, i.label, retest) if retest else (name, i.label))]
    workers = backend_info(backend.name).workers(concurrency, parallel_sequences)
    if provider_batching and todo:
        backend = provider_batch_rounds(backend, rubric, todo, cache, max_attempts, provider_batching, progress,
                                        retest)
    groups: dict[str, list[BlindItem]] = {}
    for item in todo:
        groups.setdefault(json.dumps(item.prompt_fields(), sort_keys=True), []).append(item)  # what the prompt renders

    def judge_group(group: list[BlindItem]) -> list[Judgment]:
        return [judge_item(name, backend, rubric, item, cache, max_attempts, retest) for item in group]

    def stamp(j: Judgment) -> Judgment:  # when it was written: amendments are dated against it
        return replace(j, time=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))

    bar = tqdm(total=len(todo), desc=f"{'retest' if retest else 'judge'} {name}", unit="verdict",
               disable=not progress, leave=False)
    try:
        with jsonl.Appender(out) as writer:  # the file exists (and a torn last line is repaired) from the start
            tally = call_loop.run(writer, resume, groups.values(), judge_group, backend, workers, first_alone=True,
                                  stamp=stamp, advance=bar.update)
    finally:
        bar.close()
    return {"judge": name, "items": len(items), "already_done": len(items) - len(todo),
            "retried": sum(((name, i.label, retest) if retest else (name, i.label)) in resume.retry for i in todo),
            "model_calls": tally.model_calls,
            "cached_calls": tally.cached_calls, "concurrency": workers}
