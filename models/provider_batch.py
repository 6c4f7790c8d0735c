"""Provider batch APIs (OpenAI Batch, Anthropic Message Batches) in front of the ordinary call loop.

A model registered with `provider_batch = true` is asked through its provider's batch API, which bills half the
synchronous price and answers within a day. Collection and judging stay as they are: before their
per-row loop, `fill` sends every call the loop will make that the call cache does not hold as one batch
(custom_id = the call key), and `Answered` then stands in for the backend, answering each call from the
batch's results. So rows, the call cache, the retry rule and the write order are the ordinary loop's,
and only what reaches the backend changes. A call the batch did not answer raises `BatchFailed` there,
which the loop records as an `error` row (asked again by the next run, as any failed call): it is never
sent again synchronously, at full price, behind the user's back.

Nothing is paid twice. Before a batch is submitted, the intent (its call keys and a tag derived from the folder,
the intent's place in the log and the keys) is appended to `batches.jsonl` in the run folder; the batch id when
the provider has accepted it, before the first wait; and its end (which keys succeeded, failed, or were never
run) when it ends. A run that finds a recorded batch covering calls it still needs follows that batch instead of
submitting: a killed run resumes polling, and results fetched but not yet written into rows are fetched again
(free). An intent without its batch id (a kill, or a lost answer, between the provider accepting the batch and
the record) is reconciled first, from the provider's own list of batches: OpenAI's carries the tag in its
metadata; Anthropic's Message Batches carry none, so a batch listed around the intent's time with as many
requests is followed until it ends and adopted when its custom_ids are the intent's call keys. A batch found is
recorded and followed; none found, the intent is closed and its calls are submitted anew.

Requests an expired or cancelled batch never ran are submitted again in a new batch, up to the model's registered
`attempts` batches in one run; those still unanswered then become error rows. A failure recorded in a batch that
ended in an earlier run is the retry rule's business: that call is submitted again.

Results are kept in memory, not written to the call cache when fetched, so that the cache is filled by the
ordinary loop and each row's `cached_calls` still means "paid before", as it does for synchronous calls.
Glue makes calls that depend on earlier replies, which cannot be known before the batch is sent: arms with
glue are refused on a batch model at registration (registration.spec).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from core import jsonl
from core.errors import BadRecord

from .backends.base import ProviderBatchBackend, Reply, Request
from .cache import call_key
from .retry import BatchFailed, describe, is_call_failure
from .spec import ModelSpec

LOG = "batches.jsonl"
SKEW_S = 15 * 60  # between this machine's clock and the provider's, and for the provider to accept a submission


@dataclass(frozen=True)
class ProviderBatching:
    """How one model's calls are batched: where its batches are recorded, how often to look, how many tries."""

    log: Path
    poll_s: float
    rounds: int  # submissions of one request in one run, when batches expire before running it
    max_requests: int | None = None  # per batch, as registered; None: the provider's limit
    max_bytes: int | None = None

    @classmethod
    def of(cls, model: ModelSpec, run_dir: Path) -> "ProviderBatching | None":
        return cls(Path(run_dir) / LOG, model.batch_poll_s, model.attempts, model.batch_max_requests,
                   model.batch_max_bytes) if model.provider_batch else None


@dataclass
class Outcome:
    """What this run's batches said: a reply per answered call key, a failure per call they could not answer."""

    replies: dict[str, Reply] = field(default_factory=dict)
    failed: dict[str, BatchFailed] = field(default_factory=dict)


def _record(log: Path, rec: dict[str, Any]) -> None:
    with jsonl.Appender(log) as w:  # one fsynced line: a kill leaves the file readable
        w.write({**rec, "time": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})


def recorded(log: Path) -> tuple[dict[str, dict], dict[str, dict]]:
    """The batches in `log`: (submitted, ended), each by batch id, in the order they were written."""
    submitted: dict[str, dict] = {}
    ended: dict[str, dict] = {}
    for no, rec in jsonl.read(log, required=("event",)):
        if rec["event"] in ("submitted", "ended"):
            if "batch_id" not in rec:
                raise BadRecord(log, "missing", line=no, field="batch_id")
            (submitted if rec["event"] == "submitted" else ended)[rec["batch_id"]] = rec
    return submitted, ended


def open_intents(log: Path) -> dict[str, dict]:
    """Intents to submit (by tag) whose outcome the log never got: no batch id recorded, and not found since."""
    intents: dict[str, dict] = {}
    closed: set[str] = set()
    for _, rec in jsonl.read(log, required=("event",)):
        if rec["event"] == "submitting":
            intents[rec["tag"]] = rec
        elif rec.get("tag"):
            closed.add(rec["tag"])
    return {tag: rec for tag, rec in intents.items() if tag not in closed}


def _intend(log: Path, provider: str, keys: list[str]) -> str:
    """Record the intent to submit `keys` before submitting: its tag, derived from the folder, the intent's place in
    the log and the keys (so two intents never share one, even for the same keys)."""
    n = sum(1 for _, rec in jsonl.read(log, required=("event",)) if rec["event"] == "submitting")
    blob = json.dumps({"folder": str(log.parent.resolve()), "intent": n, "keys": keys})
    tag = "blindeval-" + hashlib.sha256(blob.encode()).hexdigest()[:32]
    _record(log, {"event": "submitting", "tag": tag, "provider": provider, "keys": keys})
    return tag


def batched_keys(log: Path) -> set[str]:
    """Call keys a batch answered (billed at the batch price)."""
    return {k for rec in recorded(log)[1].values() for k in rec.get("succeeded", ())}


def say(progress: bool) -> Callable[[str], None]:
    """Where a run says what its batches are doing: above the progress bar, or nowhere under --quiet."""
    from tqdm import tqdm

    return (lambda m: tqdm.write(m, file=sys.stderr)) if progress else (lambda m: None)


def fill(backend: ProviderBatchBackend, requests: dict[str, Request], how: ProviderBatching, progress: bool) -> Outcome:
    """Answer `requests` (call key -> request, none of them in the call cache) through batches."""
    tell = say(progress)
    outcome = Outcome()
    if not requests:
        return outcome
    unsettled = reconcile(backend, requests, how, tell)
    submitted, ended = recorded(how.log)
    for batch_id, rec in submitted.items():  # follow, never re-submit, what a batch may still answer
        mine = [k for k in rec["keys"] if k in requests and k not in outcome.replies]
        done = ended.get(batch_id)
        if not mine or (done and not set(mine) & set(done.get("succeeded", ()))):
            continue  # failed there or never run: submitted again below
        tell(f"following batch {batch_id} recorded in {how.log.name} ({len(mine)} calls still needed)")
        results = _follow(backend, batch_id, rec["keys"], how, record_end=done is None)
        for key in mine:
            if isinstance(results.get(key), Reply):
                outcome.replies[key] = results[key]
            elif done is None and isinstance(results.get(key), BatchFailed):
                outcome.failed[key] = results[key]
    for key, failure in unsettled.items():  # never submitted anew while the provider may hold them
        if key not in outcome.replies:
            outcome.failed.setdefault(key, failure)
    todo = [k for k in requests if k not in outcome.replies and k not in outcome.failed]
    for _ in range(how.rounds):
        if not todo:
            break
        sent: list[tuple[str, list[str]]] = []
        for part in parts(backend, requests, todo, how, outcome):
            tag = _intend(how.log, backend.name, part)  # before the provider can accept it: a kill leaves the intent
            try:
                batch_id = backend.submit_batch({k: requests[k] for k in part}, tag)
            except Exception as e:
                if not is_call_failure(e):
                    raise
                # not retried here: the provider may have accepted it; the next run reconciles the intent
                outcome.failed.update({k: BatchFailed(f"the batch could not be submitted: {describe(e)['message']}",
                                                      getattr(e, "status_code", None)) for k in part})
                continue
            # recorded before any wait: a killed run finds it and follows it instead of paying again
            _record(how.log, {"event": "submitted", "batch_id": batch_id, "provider": backend.name, "keys": part,
                              "tag": tag})
            tell(f"submitted batch {batch_id}: {len(part)} calls; polling every {how.poll_s:g} s")
            sent.append((batch_id, part))
        missing = []
        for batch_id, part in sent:  # all submitted before any wait: the provider runs them side by side
            results = _follow(backend, batch_id, part, how, record_end=True)
            for key in part:
                if isinstance(results.get(key), Reply):
                    outcome.replies[key] = results[key]
                elif isinstance(results.get(key), BatchFailed):
                    outcome.failed[key] = results[key]
            missing += [k for k in part if results.get(k) is None]
        todo = missing
    for key in todo:
        outcome.failed[key] = BatchFailed(f"no result after {how.rounds} batches (each expired or was cancelled "
                                          "before running it)")
    return outcome


def reconcile(backend: ProviderBatchBackend, requests: dict[str, Request], how: ProviderBatching,
              tell: Callable[[str], None]) -> dict[str, BatchFailed]:
    """Settle each open intent whose calls are still needed, from the provider's list of batches: the batch it
    accepted is recorded as submitted (then followed like any other), or the intent is closed as not found (its
    calls are then submitted anew). Calls of an intent that cannot be settled now (the provider unreachable) fail
    in this run, never submitted again while the provider may hold them; the next run settles it."""
    failed: dict[str, BatchFailed] = {}
    for tag, intent in open_intents(how.log).items():
        if not set(intent["keys"]) & set(requests):
            continue
        try:
            found = _find(backend, tag, intent, how, tell)
        except Exception as e:
            if not is_call_failure(e):
                raise
            failure = BatchFailed(f"could not learn whether the provider accepted the batch intended at "
                                  f"{intent['time']} ({describe(e)['message']}); the next run asks again")
            failed.update({k: failure for k in intent["keys"] if k in requests})
            continue
        if found is None:
            _record(how.log, {"event": "not found", "tag": tag})
            tell(f"the batch intended at {intent['time']} is not in the provider's list: submitting its calls")
        else:
            _record(how.log, {"event": "submitted", "batch_id": found, "provider": backend.name,
                              "keys": intent["keys"], "tag": tag, "found_by": "listing"})
            tell(f"found batch {found}, accepted by the provider but not recorded before the run stopped: following it")
    return failed


def _find(backend: ProviderBatchBackend, tag: str, intent: dict, how: ProviderBatching,
          tell: Callable[[str], None]) -> str | None:
    """The provider's batch an intent became, or None. A batch the log records already belongs to another intent."""
    known = set(recorded(how.log)[0])
    at = dt.datetime.fromisoformat(intent["time"]).timestamp()
    keys = set(intent["keys"])
    listed = [b for b in backend.listed_batches(at - SKEW_S) if b.batch_id not in known and b.created <= at + SKEW_S]
    if backend.batch_tags:
        return next((b.batch_id for b in listed if b.tag == tag), None)
    for b in listed:  # no tag: a batch of as many requests, made around then, is the intent's if its custom_ids are
        if b.requests != len(keys):
            continue
        tell(f"batch {b.batch_id} was created when a batch of {len(keys)} calls was submitted but not recorded: "
             "following it until it ends to read its custom_ids")
        while not backend.batch_status(b.batch_id)[0]:
            time.sleep(how.poll_s)
        if backend.batch_custom_ids(b.batch_id) == keys:
            return b.batch_id
    return None


def parts(backend: ProviderBatchBackend, requests: dict[str, Request], keys: list[str], how: ProviderBatching,
          outcome: Outcome) -> list[list[str]]:
    """`keys` cut, in order, into batches within the registered limits or else the provider's (requests, bytes as
    the batch carries them). A request too large for any batch fails here, unsent."""
    max_requests = how.max_requests or backend.batch_limits[0]
    max_bytes = how.max_bytes or backend.batch_limits[1]
    out: list[list[str]] = []
    size = 0
    for key in keys:
        n = len(json.dumps(backend.batch_item(key, requests[key])).encode()) + 1  # a line of JSON
        if n > max_bytes:
            outcome.failed[key] = BatchFailed(f"the request is {n} bytes as a batch carries it, over the batch limit "
                                              f"of {max_bytes} bytes")
            continue
        if not out or len(out[-1]) == max_requests or size + n > max_bytes:
            out.append([])
            size = 0
        out[-1].append(key)
        size += n
    return out


def _follow(backend: ProviderBatchBackend, batch_id: str, keys: list[str], how: ProviderBatching,
            record_end: bool) -> dict[str, Reply | BatchFailed | None]:
    """Poll until the batch has ended, then its result per key. A batch that cannot be followed (the provider
    unreachable after the retries) fails its calls in this run; the next run follows it again."""
    try:
        while True:
            over, status = backend.batch_status(batch_id)
            if over:
                break
            time.sleep(how.poll_s)
        results = backend.batch_results(batch_id, keys)
    except Exception as e:
        if not is_call_failure(e):
            raise
        failure = f"batch {batch_id} could not be followed: {describe(e)['message']}"
        return {k: BatchFailed(failure, getattr(e, "status_code", None)) for k in keys}
    if record_end:
        _record(how.log, {"event": "ended", "batch_id": batch_id, "status": status,
                          "succeeded": [k for k in keys if isinstance(results[k], Reply)],
                          "failed": {k: str(r) for k, r in results.items() if isinstance(r, BatchFailed)},
                          "missing": [k for k in keys if results[k] is None]})
    return results


class Answered:
    """The backend as the ordinary loop sees it once batches have run: each call answered by a batch result,
    or failed with the batch's reason; nothing is sent synchronously."""

    def __init__(self, backend: ProviderBatchBackend):
        self.backend = backend
        self.name = backend.name
        self.outcome = Outcome()

    def add(self, outcome: Outcome) -> None:
        self.outcome.replies.update(outcome.replies)
        self.outcome.failed.update(outcome.failed)

    def reply(self, key: str) -> Reply | None:
        return self.outcome.replies.get(key)

    def complete(self, request: Request) -> Reply:
        key = call_key(self.backend.identity(), request)
        if key in self.outcome.replies:
            return self.outcome.replies[key]
        failed = self.outcome.failed.get(key)
        if failed is not None:
            raise BatchFailed(str(failed), failed.status_code)
        raise BatchFailed("this call was not in any batch of this run, and a batch model is never asked directly")

    def __getattr__(self, name: str) -> Any:  # identity, effective, sent, read_back, close: the backend's own
        return getattr(self.backend, name)


def answer(backend: ProviderBatchBackend, requests: dict[str, Request], cache, how: ProviderBatching,
           progress: bool) -> Answered:
    """The backend standing in for `backend` once every call in `requests` the cache lacks went through batches."""
    answered = Answered(backend)
    answered.add(fill(backend, {k: r for k, r in requests.items() if cache.get(k) is None}, how, progress))
    return answered
