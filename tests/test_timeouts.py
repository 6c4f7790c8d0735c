"""HTTP faults a model call can end in, through the official SDKs against a scripted server on 127.0.0.1.

- a server slower than the registered `timeout_s`: each attempt is abandoned at the timeout (the
  server logs when the client hung up), retried within the registered attempts, then an `error`
  row saying "timed out"; a later attempt in time gives an ok row;
- a truncated response (Content-Length promising more than is sent, or a chunked body without its
  last chunk, then a close): the SDK's connection error, retried, then an `error` row naming
  RemoteProtocolError; a later complete reply gives an ok row;
- a server that trickles its reply (a byte every 0.2 s, each read well within `timeout_s`, the whole lasting
  two minutes): each attempt is cut off at the registered `deadline_s`, retried, then an `error` row saying so;
- a complete body that is valid JSON but not a reply (no `choices`, no `content`): an `error`
  row keeping the body, not retried, never a crash and never a score (the backends check the
  reply's shape and raise `models.retry.MalformedReply`).

Each case runs for answer collection (`arms.collect.collect`) and judging (`judge.judging.calls.judge_all`),
on both SDKs. Nothing is patched: the registered ModelSpec goes through `open_backend`.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from arms.collect import collect
from core import jsonl
from core.errors import BadInput
from judge.judging.blinding import BlindItem
from judge.judging.calls import judge_all
from models.backends.base import Generation
from models.cache import CallCache
from models.load import open_backend
from models.retry import MalformedReply, describe, is_call_failure, kind, retryable
from models.spec import ModelSpec, Runtime
from registration.prereg import load_experiment
from registration.questions import Question
from registration.rubric import load_rubric
from registration.spec import ArmSpec

from conftest import ROOT
from support.scripted_server import ScriptedServer, Seen, Step, raw_body, reply, trickled, truncated, verdict

try:  # the SDKs here depend on the httpx fork `httpx2`; elsewhere on httpx itself
    import httpcore2 as httpcore
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpcore
    import httpx

APIS = ("openai", "anthropic")
PATHS = ("collect", "judge")
TIMEOUT = 0.3  # the registered timeout_s
SLOW = 3.0  # how long the slow server would take to answer (it stops waiting when the client hangs up)
ATTEMPTS = 2  # the registered attempts
BACKOFF_MIN = 0.5  # models.retry's first wait without Retry-After: 0.5 s + up to 1 s of jitter
SLACK = 0.4  # scheduling delay allowed on a busy 2-core machine
RUBRIC = load_rubric("correctness")
GOOD = {"rationale": "Agrees with the reference.", "score": 2, "harmful": False}
DOOMED, RECOVERS = "Doomed", "Recovering"  # one item faults on every attempt, the other only on its first


def spec(api: str, server: ScriptedServer, concurrency: int, **limits: float) -> ModelSpec:
    url = server.openai_url if api == "openai" else server.anthropic_url
    return ModelSpec("m", api, "m", base_url=url, base_urls=(url,) if api == "openai" else (), concurrency=concurrency,
                     sampling_params=True, attempts=ATTEMPTS, **{"timeout_s": TIMEOUT, **limits})


class Script:
    """Per item (a name its prompt contains): `fault` on its first `times` calls (None: every call), then `good`."""

    def __init__(self, good: Callable[[], Step], plan: dict[str, tuple[Callable[[], Step], int | None]]):
        self.good, self.plan = good, plan
        self.calls: dict[str, list[Seen]] = {name: [] for name in plan}
        self.lock = threading.Lock()

    def __call__(self, seen: Seen) -> Step:
        name = next(n for n in self.plan if n in seen.prompt)
        fault, times = self.plan[name]
        with self.lock:
            self.calls[name].append(seen)
            n = len(self.calls[name])
        return fault() if times is None or n <= times else self.good()


def run_path(path: str, api: str, script: Script, tmp_path: Path,
             **limits: float) -> tuple[dict[str, dict], ScriptedServer, dict]:
    """Answer (collect) or judge (judge_all) one item per name in the plan, all at once (`limits`: the model's
    timeout_s and deadline_s, when not the module's).

    Returns the rows as written (by item name), the server and the stats; a call that raised would fail the test.
    """
    names = list(script.plan)
    with ScriptedServer(script, models=("m",)) as server:
        model = spec(api, server, len(names), **limits)
        cache = CallCache(tmp_path / "calls.sqlite")
        if path == "collect":
            questions = [Question(f"q-{n}", f"{n} question?", None, (), None, "t.jsonl") for n in names]
            arm = ArmSpec("arm", "m", ("served",), Generation(max_tokens=8))
            out = tmp_path / "answers.jsonl"
            stats = collect([arm], {"m": model}, {}, questions, tmp_path, Runtime(), out, cache, progress=False)
            rows = {r["question_id"].removeprefix("q-"): r for _, r in jsonl.read(out)}
        else:
            items = [BlindItem(label=f"L-{n}", question_id=f"q-{n}", question="How much is an Annual membership?",
                               reference="180 alder crowns.", answer=f"{n} answer.") for n in names]
            backend = open_backend(model, None, None, tmp_path, Runtime())
            out = tmp_path / "judgments.jsonl"
            try:
                stats = judge_all("j", backend, RUBRIC, items, cache, out, progress=False, concurrency=len(names))
            finally:
                backend.close()
            rows = {r["label"].removeprefix("L-"): r for _, r in jsonl.read(out)}
    assert sorted(rows) == sorted(names)
    return rows, server, stats


def assert_failed(path: str, row: dict) -> dict:
    """A doomed row: an error with its cause, no text, no score. Returns the recorded error."""
    if path == "collect":
        assert row["status"] == "error" and row["text"] is None and row["raw_output"] is None
        return row["error"]
    assert row["status"] == "error" and row["score"] is None and row["fields"] is None
    err = row["attempts"][-1]["error"]
    assert row["error"] == f"judge call failed: {err['message']}" and row["attempts"][-1]["raw"] is None
    return err


def assert_ok(path: str, row: dict, text: str) -> None:
    if path == "collect":
        assert row["status"] == "ok" and row["text"] == text and row["error"] is None
    else:
        assert row["status"] == "scored" and row["score"] == 2 and row["error"] is None


def good_for(path: str, text: str) -> Callable[[], Step]:
    return (lambda: reply(text)) if path == "collect" else (lambda: verdict(GOOD))


# --- client timeouts -------------------------------------------------------------------------------

@pytest.mark.integration
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("path", PATHS)
def test_slower_than_timeout_is_abandoned_retried_then_an_error_row(path, api, tmp_path):
    slow = lambda: verdict(GOOD, delay_s=SLOW)  # noqa: E731  (a verdict is also a fine answer text)
    script = Script(good_for(path, "in time"), {DOOMED: (slow, None), RECOVERS: (slow, 1)})
    rows, server, stats = run_path(path, api, script, tmp_path)

    err = assert_failed(path, rows[DOOMED])
    assert err["type"] == "APITimeoutError" and err["kind"] == "timeout" and err["status"] is None
    assert err["message"].startswith(f"timed out after the client timeout of {TIMEOUT:g} s"), err["message"]
    assert "ReadTimeout" in err["message"]
    assert_ok(path, rows[RECOVERS], "in time")
    assert path == "judge" or stats["errors"] == 1

    # the registered attempts, no more: ATTEMPTS for the doomed item, 2 for the one that recovered
    assert len(script.calls[DOOMED]) == ATTEMPTS and len(script.calls[RECOVERS]) == 2 and server.count == ATTEMPTS + 2
    # every slow call was abandoned by the client at the registered timeout, not when the server answered
    slow_calls = [s.index for s in script.calls[DOOMED]] + [script.calls[RECOVERS][0].index]
    assert sorted(server.abandoned) == sorted(slow_calls), server.abandoned
    assert all(TIMEOUT - 0.05 <= server.abandoned[i] < TIMEOUT + SLACK for i in slow_calls), server.abandoned
    # ... and retried after the backoff, long before the slow server would have answered
    gap = script.calls[DOOMED][1].arrived - script.calls[DOOMED][0].arrived
    assert TIMEOUT + BACKOFF_MIN - 0.05 <= gap < TIMEOUT + BACKOFF_MIN + 1.0 + SLACK < SLOW, gap


# --- truncated responses ---------------------------------------------------------------------------

@pytest.mark.integration
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("path", PATHS)
def test_truncated_response_is_retried_then_an_error_row(path, api, tmp_path):
    cut = {how: (lambda how=how: truncated(how, text=json.dumps(GOOD))) for how in ("length", "chunked")}
    plan = {f"{who}-{how}": (cut[how], None if who == DOOMED else 1) for who in (DOOMED, RECOVERS) for how in cut}
    script = Script(good_for(path, "complete"), plan)
    rows, server, stats = run_path(path, api, script, tmp_path)

    for how, detail in (("length", "(received "), ("chunked", "(incomplete chunked read)")):
        err = assert_failed(path, rows[f"{DOOMED}-{how}"])
        assert err["type"] == "APIConnectionError" and err["kind"] == "connection" and err["status"] is None
        assert "RemoteProtocolError: peer closed connection without sending complete message body" in err["message"]
        assert detail in err["message"], err["message"]
        assert len(script.calls[f"{DOOMED}-{how}"]) == ATTEMPTS
        assert_ok(path, rows[f"{RECOVERS}-{how}"], "complete")
        assert len(script.calls[f"{RECOVERS}-{how}"]) == 2
    assert path == "judge" or stats["errors"] == 2
    assert server.abandoned == {}  # the server wrote what it meant to: the client saw the cut, not a timeout


# --- a server that trickles ------------------------------------------------------------------------

DEADLINE = 1.5  # the registered deadline_s; the per-read timeout_s is 30 s, the trickle a byte every 0.2 s for 120 s


@pytest.mark.integration
@pytest.mark.parametrize("api, how", [("openai", "all"), ("anthropic", "body")])  # headers trickled too, or the body
def test_a_trickling_server_is_cut_off_at_the_total_deadline_retried_then_an_error_row(api, how, tmp_path):
    slow = lambda: trickled(how, "in time")  # noqa: E731
    script = Script(good_for("collect", "in time"), {DOOMED: (slow, None), RECOVERS: (slow, 1)})
    threads, started = set(threading.enumerate()), time.monotonic()
    rows, server, stats = run_path("collect", api, script, tmp_path, timeout_s=30.0, deadline_s=DEADLINE)
    took = time.monotonic() - started

    err = assert_failed("collect", rows[DOOMED])
    assert err["type"] == "APITimeoutError" and err["kind"] == "timeout" and err["status"] is None
    assert err["message"].startswith(f"timed out at the total deadline of {DEADLINE:g} s"), err["message"]
    assert_ok("collect", rows[RECOVERS], "in time")
    assert stats["errors"] == 1 and len(script.calls[DOOMED]) == ATTEMPTS and len(script.calls[RECOVERS]) == 2
    # every trickled attempt was abandoned by the client near its deadline, never waited out (120 s each)
    trickled_calls = [s.index for s in script.calls[DOOMED]] + [script.calls[RECOVERS][0].index]
    for _ in range(50):  # the server notices the last hang-up a moment after the client's error
        if len(server.abandoned) == len(trickled_calls):
            break
        time.sleep(0.1)
    assert sorted(server.abandoned) == sorted(trickled_calls), server.abandoned
    assert all(DEADLINE / 2 <= server.abandoned[i] < 20 for i in trickled_calls), server.abandoned
    assert took < 40, took  # two attempts and a backoff, where the trickle alone would take 240 s
    left = lambda: [t for t in set(threading.enumerate()) - threads if t.name != "tqdm_monitor"]  # noqa: E731
    for _ in range(50):  # no thread left behind: the server's end once they saw the hang-ups, and the client has none
        if not left():
            break
        time.sleep(0.1)
    assert not left(), left()


@pytest.mark.unit
@pytest.mark.parametrize("value", ["0", "-1", "86401", '"60"'])
def test_deadline_s_is_a_number_within_its_bounds(tmp_path, value):
    text = (ROOT / "sealed" / "demo" / "prereg.toml").read_text()
    (tmp_path / "prereg.toml").write_text(text.replace('source = "gpt-4o-mini"\n',
                                                       f'source = "gpt-4o-mini"\ndeadline_s = {value}\n', 1))
    with pytest.raises(BadInput) as e:
        load_experiment(tmp_path)
    assert e.value.field == "deadline_s" and e.value.line == text.splitlines().index('source = "gpt-4o-mini"') + 2


@pytest.mark.unit
def test_deadline_s_is_registered_per_http_model_with_its_default(tmp_path):
    text = (ROOT / "sealed" / "demo" / "prereg.toml").read_text()
    (tmp_path / "prereg.toml").write_text(text.replace('source = "gpt-4o-mini"\n',
                                                       'source = "gpt-4o-mini"\ndeadline_s = 45\n', 1))
    models = load_experiment(tmp_path).models
    assert (models["gpt"].deadline_s, models["claude"].deadline_s) == (45.0, 600.0)  # 600: the documented default
    (tmp_path / "prereg.toml").write_text(text.replace('source = "embedded:smollm2"',
                                                       'source = "embedded:smollm2"\ndeadline_s = 45', 1))
    with pytest.raises(BadInput) as e:  # a model run in process is no HTTP call: the key would be ignored
        load_experiment(tmp_path)
    assert e.value.field == "deadline_s" and "llama-cpp" in str(e.value)


# --- a complete body that is not a reply -----------------------------------------------------------

NOT_A_REPLY = [  # (api, body): a complete 200 body, valid JSON, that is not a reply
    pytest.param("openai", '{"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m"}',
                 id="openai-no-choices"),
    pytest.param("openai", '{"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m", '
                 '"choices": []}', id="openai-empty-choices"),
    pytest.param("anthropic", '{"id": "msg_1", "type": "message", "role": "assistant", "model": "m", '
                 '"stop_reason": "end_turn"}', id="anthropic-no-content"),
    pytest.param("anthropic", '{"content": []}', id="anthropic-not-a-message"),
]


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("api, body", NOT_A_REPLY)
def test_valid_json_that_is_not_a_reply_is_an_error_row_keeping_the_body(api, body, path, tmp_path):
    script = Script(good_for(path, "fine"), {DOOMED: (lambda: raw_body(body), None), RECOVERS: (None, 0)})
    rows, server, stats = run_path(path, api, script, tmp_path)

    err = assert_failed(path, rows[DOOMED])
    assert err["type"] == "MalformedReply" and err["kind"] == "malformed_reply"
    assert json.loads(err["body"]) == json.loads(body)  # the raw reply is kept
    assert len(script.calls[DOOMED]) == 1  # a complete answer from the server: not asked again
    assert path == "judge" or stats["errors"] == 1
    assert_ok(path, rows[RECOVERS], "fine")  # the other item of the same run is unaffected


# --- the classifier itself -------------------------------------------------------------------------

def _request() -> httpx.Request:
    return httpx.Request("POST", "http://127.0.0.1:9/v1/x", extensions={"timeout": {"read": TIMEOUT}})


@pytest.mark.unit
def test_timeouts_and_cut_connections_are_retryable_and_named():
    import anthropic
    import openai

    cases = {  # exception -> (retryable, kind)
        openai.APITimeoutError(request=_request()): (True, "timeout"),
        anthropic.APITimeoutError(request=_request()): (True, "timeout"),
        openai.APIConnectionError(request=_request()): (True, "connection"),
        anthropic.APIConnectionError(request=_request()): (True, "connection"),
        httpx.ReadTimeout("timed out"): (True, "timeout"),
        httpx.ConnectTimeout("timed out"): (True, "timeout"),
        httpx.PoolTimeout("timed out"): (True, "timeout"),
        httpcore.ReadTimeout("timed out"): (True, "timeout"),
        httpx.RemoteProtocolError("peer closed connection"): (True, "connection"),
        httpx.ReadError("reset"): (True, "connection"),
        httpcore.RemoteProtocolError("peer closed connection"): (True, "connection"),
        TimeoutError("timed out"): (True, "timeout"),
        ConnectionResetError("reset"): (True, "connection"),
        httpx.LocalProtocolError("our request was malformed"): (False, "other"),
        MalformedReply("no choices", body="{}"): (False, "malformed_reply"),
        json.JSONDecodeError("Expecting value", "{", 1): (False, "malformed_reply"),
    }
    for exc, (want_retry, want_kind) in cases.items():
        assert retryable(exc) is want_retry, exc
        assert kind(exc) == want_kind, exc
        assert is_call_failure(exc), exc
    assert not is_call_failure(TypeError("a bug in our code"))


@pytest.mark.unit
def test_describe_names_the_timeout_and_the_wrapped_transport_error():
    import openai

    try:
        try:
            raise httpx.ReadTimeout("timed out")
        except httpx.ReadTimeout as inner:
            raise openai.APITimeoutError(request=_request()) from inner
    except openai.APITimeoutError as e:
        d = describe(e)
    assert d == {"type": "APITimeoutError", "kind": "timeout", "status": None,
                 "message": f"timed out after the client timeout of {TIMEOUT:g} s: Request timed out. "
                            "[ReadTimeout: timed out]"}
    d = describe(MalformedReply("the reply has no choices[0].message", body='{"id": "x"}'))
    assert d["kind"] == "malformed_reply" and d["body"] == '{"id": "x"}'
