"""Server replies as a class of inputs: whatever a server sends back, an answer row holds text only when the reply
held real text; every other reply is an `error` row whose kind says why (`empty`, `refusal`, `malformed_reply`),
and a row once written reads back and is finished by the next run (the retry rule), so no reply can leave a
folder that never completes.

The replies are generated from a well-formed one by hypothesis (wrong JSON types where the API promises others,
`content: null`, Anthropic's `content: []`, refusals, negative, fractional, textual and huge token counts, lone
surrogates as `\\ud800` escapes, bytes that are not UTF-8, bodies that are not JSON) and sent by the scripted
server, one per module, to the official SDKs through the harness's own collection loop. What each planted
mutation allows is written here from the rule in docs/explanation/faults.md, not read from the code.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arms.collect import collect
from core import jsonl
from core.errors import BadInput
from core.records import ANSWER_KEY, AnswerRow
from judge.judging.blinding import BlindItem
from judge.judging.calls import judge_item
from models.backends.anthropic import AnthropicBackend, AnthropicConfig
from models.backends.base import Generation
from models.backends.openai import OpenAIBackend, OpenAIConfig
from models.cache import CallCache
from models.spec import ModelSpec, Runtime
from registration.questions import Question
from registration.rubric import load_rubric
from registration.seal import seal
from registration.spec import ArmSpec

from support.scripted_server import ScriptedServer, Step, raw_body, reply

pytestmark = pytest.mark.integration

SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
MALFORMED, EMPTY, REFUSAL = "malformed_reply", "empty", "refusal"
real_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30).filter(str.strip)
blank_text = st.sampled_from(["", " ", "\n\t ", "\u3000"])
bad_counts = st.sampled_from([-1, -(2**40), 2**53, 10**30, 1e300, "12", "many", 1.5, -3.0, True, [3], {"n": 1}])
# The OpenAI SDK reads "12", true and 12.0 where it expects an integer as 12, 1 and 12 (its models are built
# without validation, but this much it coerces): the harness judges what reaches it, so those are not planted there.
openai_bad_counts = st.sampled_from([-1, -(2**40), 2**53, 10**30, 1e300, "many", "1.5", 1.5, -3.0, [3], {"n": 1}])


@dataclass
class Planted:
    """A reply as JSON (or raw bytes) and what the rule allows for it: "ok", or the error kinds it may give."""

    body: dict | list | str | int | None = None
    raw: bytes | None = None
    allows: set[str] = field(default_factory=set)  # empty: an answer
    text: str | None = None
    tokens: tuple[int, int] = (0, 0)

    def step(self) -> Step:
        return raw_body(self.raw if self.raw is not None else json.dumps(self.body))


class Server:
    """One scripted server for the module: question i of a collection is answered with `steps[i]`."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.scripted = ScriptedServer(self._answer, models=("m",))

    def _answer(self, seen) -> Step:
        return self.steps[int(re.search(r"Question (\d+)\?", seen.prompt).group(1))]

    def __enter__(self) -> "Server":
        self.scripted.start()
        return self

    def __exit__(self, *exc) -> None:
        self.scripted.stop()


@pytest.fixture(scope="module")
def server():
    with Server() as s:
        yield s


def _spec(api: str, server: Server) -> ModelSpec:
    url = server.scripted.openai_url if api == "openai" else server.scripted.anthropic_url
    return ModelSpec(name="m", backend=api, source="m", base_url=url, base_urls=(url,), attempts=1, timeout_s=10,
                     sampling_params=api == "anthropic")


ARM = ArmSpec(name="a", model="m", quants=("served",), generation=Generation(max_tokens=16))


def _question(i: int) -> Question:
    return Question(id=f"q{i}", question=f"Question {i}?", reference="Four hours.", tags=(), cluster=None,
                    set="exam.jsonl", line=i + 1)


def _collect(api: str, server: Server, folder: Path, n: int) -> dict[str, AnswerRow]:
    """Collect the answers to questions 0..n-1 into `folder` (resuming what is there) and read back the current row
    of each, by question id."""
    out = folder / "answers.jsonl"
    cache = CallCache(folder / "calls.sqlite")
    try:
        collect([ARM], {"m": _spec(api, server)}, {}, [_question(i) for i in range(n)], folder, Runtime(), out,
                cache, progress=False)
    finally:
        cache.close()
    return {c.record.question_id: c.record for c in jsonl.current(out, ANSWER_KEY, make=AnswerRow.from_dict).values()}


def _check(api: str, server: Server, folder: Path, planted: list[Planted]) -> None:
    """Each planted reply answers one question; its row is checked against what the rule allows, then the next run
    must finish the folder: every error asked again (and answered), every answer kept without a call."""
    server.steps = [p.step() for p in planted]
    rows = _collect(api, server, folder, len(planted))
    for i, p in enumerate(planted):
        row = rows[f"q{i}"]
        if not p.allows:
            assert row.status == "ok", (row.error, p)
            assert row.text == p.text and (row.prompt_tokens, row.completion_tokens) == p.tokens
        else:
            assert row.status == "error" and row.text is None, (row.status, row.text, p)
            assert row.error["kind"] in p.allows, (row.error, p.allows)
            assert row.error["message"]
            assert (row.prompt_tokens, row.completion_tokens) == (0, 0)  # nothing of a broken reply is counted
    calls = server.scripted.count
    server.steps = [reply(f"a real answer {i}") for i in range(len(planted))]
    again = _collect(api, server, folder, len(planted))
    for i, p in enumerate(planted):
        assert again[f"q{i}"].status == "ok"
        assert again[f"q{i}"].text == (p.text if not p.allows else f"a real answer {i}")
    assert server.scripted.count == calls + sum(bool(p.allows) for p in planted)


# ---- OpenAI-compatible --------------------------------------------------------------------------------------

def _openai(content, prompt=7, completion=3) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}


@st.composite
def openai_replies(draw) -> Planted:
    text = draw(real_text)
    prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))
    p = Planted(body=_openai(text, prompt, completion), text=text, tokens=(prompt, completion))
    for how in _ordered(draw(st.lists(st.sampled_from(sorted(OPENAI_MUTATIONS)), max_size=3, unique=True))):
        p.allows |= OPENAI_MUTATIONS[how](draw, p)
    if draw(st.integers(0, 9)) == 0:  # bytes no UTF-8 decoder accepts, inside the content's JSON string
        encoded = json.dumps(p.body).encode()
        at = encoded.find(b'"content": "')
        if at >= 0:
            at += len(b'"content": "')
            p.raw = encoded[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + encoded[at:]
            p.allows.add(MALFORMED)
    return p


HARMLESS = ("usage absent", "usage null", "finish reason null", "stop reason max tokens")  # still an answer


def _ordered(mutations: list[str]) -> list[str]:
    """Mutations in an order where none undoes another: the harmless ones first (a null finish reason must not
    overwrite a planted content filter, nor a removed usage a planted bad count), the choice removed last."""
    return sorted(mutations, key=lambda how: (how not in HARMLESS, how == "no choices"))


def _message(p: Planted) -> dict:
    return p.body["choices"][0]["message"]


def _choice(p: Planted) -> dict:
    return p.body["choices"][0]


def _usage(p: Planted, key: str = "usage") -> dict:
    """The reply's usage object (made anew if a mutation removed it)."""
    if not isinstance(p.body.get(key), dict):
        p.body[key] = {}
    return p.body[key]


def _no_usage(p: Planted, how) -> set[str]:
    how(p.body)
    p.tokens = (0, 0)  # a server that sends no counts: zero tokens, not an error
    return set()


def _set(target: dict, key: str, value, allows: set[str]) -> set[str]:
    target[key] = value
    return allows


def _tool_calls_only(p: Planted) -> set[str]:
    _message(p).update(content=None, tool_calls=[{"id": "t", "type": "function",
                                                  "function": {"name": "f", "arguments": "{}"}}])
    return {EMPTY}


OPENAI_MUTATIONS = {
    "content null": lambda d, p: _set(_message(p), "content", None, {EMPTY}),
    "content blank": lambda d, p: _set(_message(p), "content", d(blank_text), {EMPTY}),
    "content surrogate": lambda d, p: _set(_message(p), "content", "an answer \ud800 cut", {MALFORMED}),
    "content wrong type": lambda d, p: _set(_message(p), "content", d(st.sampled_from([5, ["a"], {"text": "a"}, True])),
                                            {MALFORMED}),
    "refusal": lambda d, p: _set(_message(p), "refusal", d(real_text), {REFUSAL}),
    "refusal wrong type": lambda d, p: _set(_message(p), "refusal", d(st.sampled_from([5, ["no"], {"a": 1}])),
                                            {MALFORMED}),
    "tool calls only": lambda d, p: _tool_calls_only(p),
    "content filter": lambda d, p: _set(_choice(p), "finish_reason", "content_filter", {REFUSAL}),
    "finish reason wrong type": lambda d, p: _set(_choice(p), "finish_reason", d(st.sampled_from([5, ["stop"], {}])),
                                                  {MALFORMED}),
    "finish reason null": lambda d, p: _set(_choice(p), "finish_reason", None, set()),
    "usage absent": lambda d, p: _no_usage(p, lambda b: b.pop("usage", None)),
    "usage null": lambda d, p: _no_usage(p, lambda b: b.update(usage=None)),
    "prompt tokens bad": lambda d, p: _set(_usage(p), "prompt_tokens", d(openai_bad_counts), {MALFORMED}),
    "completion tokens bad": lambda d, p: _set(_usage(p), "completion_tokens", d(openai_bad_counts), {MALFORMED}),
    "reasoning tokens bad": lambda d, p: _set(_usage(p), "completion_tokens_details",
                                              {"reasoning_tokens": d(openai_bad_counts)}, {MALFORMED}),
    "no choices": lambda d, p: _set(p.body, "choices", d(st.sampled_from([[], None, "x", [5], [{}]])), {MALFORMED}),
}


@SETTINGS
@given(st.lists(openai_replies(), min_size=1, max_size=8))
def test_an_openai_reply_is_an_answer_only_when_it_holds_real_text(server, tmp_path_factory, planted):
    _check("openai", server, tmp_path_factory.mktemp("openai"), planted)


# ---- Anthropic Messages -------------------------------------------------------------------------------------

def _anthropic(blocks: list, prompt=7, completion=3) -> dict:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": blocks,
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": completion}}


ANTHROPIC_MUTATIONS = {
    "content []": lambda d, p: _set(p.body, "content", [], {EMPTY}),
    "thinking only": lambda d, p: _set(p.body, "content", [{"type": "thinking", "thinking": "hm", "signature": "s"}],
                                       {EMPTY}),
    "other blocks only": lambda d, p: _set(p.body, "content", [{"type": "image"}, {
        "type": "server_tool_use", "id": "x", "name": "s", "input": {}}], {EMPTY}),
    "text blank": lambda d, p: _set(p.body, "content", [{"type": "text", "text": d(blank_text)}], {EMPTY}),
    "text surrogate": lambda d, p: _set(p.body, "content", [{"type": "text", "text": "half \udfff"}], {MALFORMED}),
    "text wrong type": lambda d, p: _set(p.body, "content", [{"type": "text", "text": d(st.sampled_from(
        [5, ["a"], {}]))}], {MALFORMED}),
    "content null": lambda d, p: _set(p.body, "content", None, {MALFORMED}),
    "not a message": lambda d, p: _set(p.body, "type", d(st.sampled_from(["error", None, 5])), {MALFORMED}),
    "refusal": lambda d, p: _set(p.body, "stop_reason", "refusal", {REFUSAL}),
    "stop reason wrong type": lambda d, p: _set(p.body, "stop_reason", d(st.sampled_from([5, ["end_turn"], {}])),
                                                {MALFORMED}),
    "stop reason max tokens": lambda d, p: _set(p.body, "stop_reason", "max_tokens", set()),
    "input tokens bad": lambda d, p: _set(_usage(p), "input_tokens", d(bad_counts), {MALFORMED}),
    "output tokens bad": lambda d, p: _set(_usage(p), "output_tokens", d(bad_counts), {MALFORMED}),
    "cache tokens bad": lambda d, p: _set(_usage(p), "cache_read_input_tokens", d(bad_counts), {MALFORMED}),
    "usage absent": lambda d, p: _no_usage(p, lambda b: b.pop("usage", None)),
}


@st.composite
def anthropic_replies(draw) -> Planted:
    text = draw(real_text)
    prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))
    p = Planted(body=_anthropic([{"type": "text", "text": text}], prompt, completion), text=text,
                tokens=(prompt, completion))
    for how in _ordered(draw(st.lists(st.sampled_from(sorted(ANTHROPIC_MUTATIONS)), max_size=3, unique=True))):
        p.allows |= ANTHROPIC_MUTATIONS[how](draw, p)
    return p


@SETTINGS
@given(st.lists(anthropic_replies(), min_size=1, max_size=8))
def test_an_anthropic_reply_is_an_answer_only_when_it_holds_real_text(server, tmp_path_factory, planted):
    _check("anthropic", server, tmp_path_factory.mktemp("anthropic"), planted)


# ---- bodies that are no reply at all ------------------------------------------------------------------------

NOT_REPLIES = [b"", b"{not json", b"null", b"[]", b"5", b'"text"', b"\xff\xfe{}", b'{"choices": [', b"[" * 3000]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_body_that_is_no_reply_is_a_malformed_error_row(server, tmp_path, api):
    _check(api, server, tmp_path, [Planted(raw=raw, allows={MALFORMED}) for raw in NOT_REPLIES])


# ---- a judge's empty or refused reply is an error judgment, not an unparsed verdict ---------------------------

@pytest.mark.parametrize("api, body, kind", [
    ("openai", _openai(None), EMPTY),
    ("openai", {**_openai(None), "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": None, "refusal": "I can't grade this."}}]}, REFUSAL),
    ("openai", _openai("   "), EMPTY),
    ("anthropic", _anthropic([]), EMPTY),
    ("anthropic", {**_anthropic([{"type": "text", "text": "No."}]), "stop_reason": "refusal"}, REFUSAL),
])
def test_a_judges_empty_or_refused_reply_is_an_error_judgment_with_its_reason(server, tmp_path, api, body, kind):
    server.steps = [raw_body(json.dumps(body))]
    spec = _spec(api, server)
    backend = (OpenAIBackend(OpenAIConfig(model="m", base_urls=spec.base_urls, attempts=1)) if api == "openai" else
               AnthropicBackend(AnthropicConfig(model="m", base_url=spec.base_url, attempts=1, sampling_params=True)))
    cache = CallCache(tmp_path / "calls.sqlite")
    try:
        j = judge_item("j", backend, load_rubric("correctness"), BlindItem("L1", "q0", "Question 0?", "A.", "Yes."),
                       cache, max_attempts=2)
    finally:
        cache.close()
        backend.close()
    assert j.status == "error" and j.score is None
    assert j.attempts[-1]["error"]["kind"] == kind and len(j.attempts) == 1  # not asked again as if unparsed


# ---- a glue's answer is text too -----------------------------------------------------------------------------

@pytest.mark.parametrize("answer", ["None", "'half \\ud800'", "42"])
def test_a_glue_answer_that_is_not_unicode_text_is_refused_naming_the_glue(server, tmp_path, answer):
    (tmp_path / "g.py").write_text("from arms.glue import GlueResult\n\n\ndef answer(question, call_model, "
                                   f"experiment_dir):\n    return GlueResult({answer})\n")
    (tmp_path / "prereg.toml").write_text("")
    seal(tmp_path)  # glue code runs only from a sealed folder
    server.steps = [reply("unused")]
    arm = ArmSpec(name="g", model="m", quants=("served",), generation=Generation(max_tokens=16), glue="g.py:answer")
    cache = CallCache(tmp_path / "calls.sqlite")
    with pytest.raises(BadInput) as e:
        collect([arm], {"m": _spec("openai", server)}, {}, [_question(0)], tmp_path, Runtime(),
                tmp_path / "answers.jsonl", cache, progress=False)
    cache.close()
    assert e.value.field == "glue" and "'g.py:answer'" in str(e.value)
    assert not (tmp_path / "answers.jsonl").read_text()  # nothing written that could not be read back
