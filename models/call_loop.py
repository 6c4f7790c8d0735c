"""The resumable call loop: answers (arms.collect), verdicts (judge.judging.calls) and the audit's readers (which judge
through judge.judging.calls) ask their model calls through it.

Items in, records out. An item is asked when its key has no record in the output file yet, or when its current
record is an `error` (core.jsonl's retry rule): the new record is appended with `retry_of` = that record's line.
Every call goes through the call cache (`cached_call`), so a finished call is never paid for twice, and a re-run
resumes. Records are appended by the caller's thread only, in item order, so the file stays one record per line
and a kill leaves a prefix (calls finished beyond it are in the cache). Up to `workers` items are in flight; a
backend that decodes several sequences together (models.backends.base.ParallelDecoding) is told how many threads
call it, so which calls share a decode step, and with it the outputs, does not depend on thread timing.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

from core import jsonl

from .backends.base import Backend, Reply, Request
from .backends.registry import backend_info
from .cache import CallCache, call_key

Item = TypeVar("Item")


@dataclass(frozen=True)
class Resume:
    """What an output file already holds: the current record of each key, and the keys to ask again."""

    key: tuple[str, ...]  # the fields that name a record's key (core.records: ANSWER_KEY, JUDGMENT_KEY)
    done: dict[tuple, jsonl.Current]
    retry: dict[tuple, int]  # key -> the line of its current record, an `error`

    @classmethod
    def of(cls, out: Path, key: tuple[str, ...]) -> "Resume":
        done = jsonl.current(out, key)
        return cls(key, done, jsonl.to_retry(done))

    def wanted(self, key: tuple) -> bool:
        """Not answered yet, or answered with an error."""
        return key not in self.done or key in self.retry


@dataclass
class Tally:
    """What one pass of the loop did."""

    records: int = 0
    model_calls: int = 0  # calls paid for now (not from the cache)
    cached_calls: int = 0
    errors: int = 0


def cached_call(backend: Backend, cache: CallCache, request: Request) -> tuple[Reply, str, bool]:
    """(reply, call key, came from the cache). Concurrent callers of one key wait for the first."""
    identity = backend.identity()
    key = call_key(identity, request)

    def call() -> Reply:
        settle = cache.guard(identity, request) if cache.guard else None  # may refuse the call before it is sent
        reply = None
        try:
            reply = backend.complete(request)
            return reply
        finally:
            if settle:
                settle(reply)

    reply, cached = cache.get_or_call(key, call, identity)
    return reply, key, cached


def run(writer: jsonl.Appender, resume: Resume, items: Iterable[Item], ask: Callable[[Item], list[Any]],
        backend: Backend, workers: int, *, first_alone: bool = False, stamp: Callable[[Any], Any] | None = None,
        advance: Callable[[int], Any] = lambda n: None) -> Tally:
    """Ask every item (`ask` returns its records, each with `to_dict`, `status`, `calls` and `cached_calls`) and
    append the records to the output file in item order, a retry with `retry_of`. `stamp` finishes a record as it
    is written (the judge's time); `advance` counts written records (a progress bar)."""
    tally = Tally()
    for records in in_order(ask, list(items), backend, workers, first_alone=first_alone):
        for record in records:
            record = stamp(record) if stamp else record
            row = record.to_dict()
            writer.write(row, retry_of=resume.retry.get(tuple(row[f] for f in resume.key)))
            tally.records += 1
            tally.model_calls += len(record.calls) - record.cached_calls
            tally.cached_calls += record.cached_calls
            tally.errors += record.status == "error"
            advance(1)
    return tally


def in_order(ask: Callable[[Item], Any], items: list[Item], backend: Backend, workers: int, *,
             first_alone: bool = False) -> Iterator[Any]:
    """`ask` over `items`, results in item order whatever finishes first, up to `workers` in flight. With
    `first_alone`, the first item is asked before any other is sent: a server that refuses every call
    (core.errors.Refused) stops the run after one call, not after one per worker."""
    if first_alone and items:
        yield ask(items[0])
        items = items[1:]
    if workers <= 1:
        yield from map(ask, items)
        return
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="call")
    try:
        yield from mapped(pool, workers, ask, items, backend)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def mapped(pool: ThreadPoolExecutor, workers: int, fn: Callable[[Item], Any], items: list[Item],
           backend: Backend) -> Iterator[Any]:
    """`pool.map(fn, items)`, telling a backend that decodes its calls together how many threads are calling it:
    each pool thread calls while items are left for it to take, then leaves. The backend then waits for all of
    them before each step, so which calls share a step, and with it the outputs, does not depend on thread
    timing."""
    if not backend_info(backend.name).parallel_decoding or not items:
        yield from pool.map(fn, items)
        return
    lock = threading.Lock()
    taken = min(workers, len(items))  # items a thread has taken or will take next
    calling = taken  # threads that have not left
    leave = backend.callers(calling)

    def one(item):
        nonlocal taken, calling
        try:
            return fn(item)
        finally:
            with lock:  # a pool thread that finishes an item takes the next one, if any is left
                stays = taken < len(items)
                taken += stays
                calling -= not stays
            if not stays:
                leave()

    try:
        yield from pool.map(one, items)
    finally:  # stopped early (an interrupt, a failed write): items never taken send nothing, so nobody waits
        with lock:
            gone, calling = calling, 0
        for _ in range(gone):
            leave()
