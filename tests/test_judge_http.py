"""Judge calls through the official openai and anthropic SDKs against servers on 127.0.0.1.

The normal path runs against llama.cpp's own `llama-server` (its OpenAI and Messages routes). The other
tests script what the "judge" says or how its server fails (`ScriptedServer`, for faults), and check the
judgment row that judge_all records: a verdict, a repaired verdict, `unscored` with the raw text kept, or
an `error` row. Never a zero. The scripted server's log measures what the client did (waits, retries,
overlap) and what each request carried.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core import jsonl
from judge.judging.blinding import BlindItem
from judge.judging.calls import judge_all
from models.backends.anthropic import AnthropicBackend, AnthropicConfig
from models.backends.openai import OpenAIBackend, OpenAIConfig
from models.cache import CallCache
from registration.questions import load_questions
from registration.rubric import load_rubric
from registration.seal import seal

from conftest import ROOT, cli, http_prereg
from support.scripted_server import ScriptedServer, Seen, Step, fail, raw_body, reply, reset, verdict

pytestmark = pytest.mark.integration

APIS = ("openai", "anthropic")
RUBRIC = load_rubric("correctness")
GOOD = {"rationale": "Agrees with the reference.", "score": 2, "harmful": False}


def item(label: str = "Lq01", answer: str = "It costs 180 alder crowns.") -> BlindItem:
    return BlindItem(label=label, question_id="q01", question="How much does an Annual membership cost?",
                     reference="180 alder crowns (Article 1.4).", answer=answer)


def open_judge(api: str, server: ScriptedServer, attempts: int = 4):
    if api == "openai":
        return OpenAIBackend(OpenAIConfig(model="judge", base_urls=(server.openai_url,), attempts=attempts,
                                          timeout_s=10))
    return AnthropicBackend(AnthropicConfig(model="judge", base_url=server.anthropic_url, attempts=attempts,
                                            timeout_s=10))


def judge_one(api: str, script: list[Step], tmp_path: Path, attempts: int = 4) -> tuple[dict, ScriptedServer]:
    """Judge one item through the SDK; return the row written to judgments.jsonl and the server."""
    out = tmp_path / "judgments.jsonl"
    with ScriptedServer(script) as server:
        backend = open_judge(api, server, attempts)
        try:
            judge_all("j", backend, RUBRIC, [item()], CallCache(tmp_path / "calls.sqlite"), out, progress=False)
        finally:
            backend.close()
    rows = [r for _, r in jsonl.read(out)]
    assert len(rows) == 1
    return rows[0], server


def judge_on_llama_server(api: str, server, tmp_path: Path) -> dict:
    """Judge one item through the SDK against llama.cpp's own server (the normal path, no script)."""
    if api == "openai":
        backend = OpenAIBackend(OpenAIConfig(model="smollm2-q8", base_urls=(server.url + "/v1",), attempts=2,
                                             timeout_s=300))
    else:
        backend = AnthropicBackend(AnthropicConfig(model="smollm2-q8", base_url=server.url, attempts=2,
                                                   timeout_s=300))
    out = tmp_path / "judgments.jsonl"
    try:
        judge_all("j", backend, RUBRIC, [item()], CallCache(tmp_path / "calls.sqlite"), out, progress=False)
    finally:
        backend.close()
    rows = [r for _, r in jsonl.read(out)]
    assert len(rows) == 1
    return rows[0]


def test_llama_server_openai_verdict_is_scored_from_its_raw_json(llama_server, tmp_path):
    """The server's JSON-schema grammar constrains the reply: one call, a strict parse, the fields as sent."""
    row = judge_on_llama_server("openai", llama_server, tmp_path)
    assert row["status"] == "scored" and row["score"] in (0, 1, 2) and not row["repaired"], row
    assert len(row["attempts"]) == 1 and row["attempts"][0]["error"] is None
    assert json.loads(row["attempts"][0]["raw"]) == row["fields"] and row["fields"]["score"] == row["score"]
    assert row["prompt_tokens"] > 0 and row["completion_tokens"] > 0 and len(row["calls"]) == 1


def test_llama_server_messages_reply_without_tool_use_is_unscored(llama_server, tmp_path):
    """llama-server's Messages route answers a forced tool call with a text block: not a verdict, never a zero."""
    row = judge_on_llama_server("anthropic", llama_server, tmp_path)
    assert row["status"] == "unscored" and row["score"] is None and row["fields"] is None
    assert len(row["attempts"]) == 2 and len(row["calls"]) == 2  # bounded: the registered attempts, then stop
    assert all(a["raw"].strip() and a["error"] for a in row["attempts"]) and row["error"]


@pytest.mark.parametrize("api", APIS)
def test_good_verdict_is_scored_and_structured_output_was_asked_for(api, tmp_path):
    """What the request carries (structured output, the cache breakpoint) only a recording server can show."""
    row, server = judge_one(api, [verdict(GOOD)], tmp_path)
    assert row["status"] == "scored" and row["score"] == 2 and not row["repaired"]
    assert server.count == 1
    body = server.seen[0].body
    if api == "openai":
        assert body["response_format"]["type"] == "json_schema"
    else:
        assert body["tool_choice"] == {"type": "tool", "name": "verdict"}
        # the shared rubric prefix carries a prompt-cache breakpoint
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["system"][-1]["text"] == RUBRIC.system
    assert "It costs 180 alder crowns." in server.seen[0].prompt


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("text", [
    # a raw newline inside a JSON string (docs/reward-telemetry.md)
    '{"rationale": "Right amount.\n\nRight article.", "score": 1, "harmful": false}',
    '```json\n{"rationale": "Right amount.", "score": 1, "harmful": false}\n```',
], ids=["raw-newline", "code-fence"])
def test_repairable_verdict_is_repaired_and_scored(api, text, tmp_path):
    row, server = judge_one(api, [reply(text)], tmp_path)
    assert row["status"] == "scored" and row["score"] == 1 and row["repaired"]
    assert row["attempts"][0]["raw"] == text  # the raw text as the SDK delivered it, control characters and all
    assert server.count == 1


@pytest.mark.parametrize("api", APIS)
def test_malformed_verdict_is_retried_and_the_second_attempt_scores(api, tmp_path):
    row, server = judge_one(api, [reply('{"rationale": "Right", "score": '), verdict(GOOD)], tmp_path)
    assert row["status"] == "scored" and row["score"] == 2
    assert len(row["attempts"]) == 2 and row["attempts"][0]["error"] and row["attempts"][1]["error"] is None
    assert server.count == 2


@pytest.mark.parametrize("api", APIS)
def test_never_parseable_is_unscored_with_raw_text_and_error_never_zero(api, tmp_path):
    row, server = judge_one(api, [reply("I would give it full marks."), reply("Full marks.")], tmp_path)
    assert row["status"] == "unscored" and row["score"] is None and row["fields"] is None
    assert row["error"] and [a["raw"] for a in row["attempts"]] == ["I would give it full marks.", "Full marks."]
    assert server.count == 2  # bounded: the registered number of attempts, then stop


@pytest.mark.parametrize("api", APIS)
def test_429_retry_after_is_honoured(api, tmp_path):
    # 2 s, not 1: the fallback backoff's first wait is 0.5-1.5 s, so only a wait >= 2 s proves the header was read
    row, server = judge_one(api, [fail(429, retry_after=2), verdict(GOOD)], tmp_path)
    assert row["status"] == "scored" and server.count == 2
    assert 2.0 <= server.gaps()[0] < 3.0, server.gaps()


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("first", [fail(500), fail(503), reset()], ids=["500", "503", "reset"])
def test_server_error_then_success_is_scored(api, first, tmp_path):
    row, server = judge_one(api, [first, verdict(GOOD)], tmp_path)
    assert row["status"] == "scored" and row["score"] == 2 and server.count == 2


@pytest.mark.parametrize("api", APIS)
def test_persistent_500_is_an_error_row_after_bounded_retries(api, tmp_path):
    row, server = judge_one(api, [fail(500), fail(500), fail(500)], tmp_path, attempts=2)
    assert row["status"] == "error" and row["score"] is None and row["fields"] is None
    assert row["attempts"][-1]["error"]["status"] == 500 and "500" in row["error"]
    assert server.count == 2


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("body", ["", '{"id": "x", "choices": ['], ids=["empty", "malformed"])
def test_unreadable_http_body_is_an_error_row_not_a_score(api, body, tmp_path):
    row, server = judge_one(api, [raw_body(body)], tmp_path)
    assert server.count >= 1 and row["status"] == "error" and row["score"] is None
    assert row["attempts"][-1]["error"]["type"] == "JSONDecodeError"  # the body, not some earlier failure


def test_concurrent_judging_overlaps_calls_and_writes_each_record_once(tmp_path):
    items = [item(f"L{i:02d}", f"Answer number {i}.") for i in range(12)]
    # two arms agreed word for word; blinding keeps one question's answers together, so they arrive side by side
    items[1:1] = [item("Ldup0", "Answer number 0.")]
    items[3:3] = [item("Ldup1", "Answer number 1.")]
    out, cache = tmp_path / "judgments.jsonl", CallCache(tmp_path / "calls.sqlite")
    with ScriptedServer(lambda seen: verdict(GOOD, delay_s=0.2)) as server:
        backend = open_judge("openai", server)
        try:
            stats = judge_all("j", backend, RUBRIC, items, cache, out, progress=False, concurrency=4)
            again = judge_all("j", backend, RUBRIC, items, cache, out, progress=False, concurrency=4)
        finally:
            backend.close()
    assert server.max_inflight == 4 and stats["concurrency"] == 4  # four calls were open at once: overlapped
    assert server.count == 12 and stats["model_calls"] == 12 and stats["cached_calls"] == 2  # no racing duplicate
    lines = out.read_text().splitlines()
    assert len(lines) == 14 and {json.loads(x)["label"] for x in lines} == {i.label for i in items}
    assert again["already_done"] == 14 and again["model_calls"] == 0 and len(out.read_text().splitlines()) == 14


class InProcessStandIn:
    """Named like the in-process llama.cpp backend, which is not thread-safe; calls go to the scripted server."""

    name = "llama-cpp"

    def __init__(self, inner: OpenAIBackend):
        self.inner = inner

    def identity(self) -> dict:
        return self.inner.identity()

    def complete(self, request):
        return self.inner.complete(request)


def test_llama_cpp_judge_is_never_called_concurrently(tmp_path):
    items = [item(f"L{i}", f"Answer {i}.") for i in range(4)]
    with ScriptedServer(lambda seen: verdict(GOOD, delay_s=0.1)) as server:
        backend = open_judge("openai", server)
        try:
            stats = judge_all("j", InProcessStandIn(backend), RUBRIC, items, CallCache(tmp_path / "c.sqlite"),
                              tmp_path / "judgments.jsonl", progress=False, concurrency=8)
        finally:
            backend.close()
    assert stats["concurrency"] == 1 and server.max_inflight == 1 and server.count == 4


# --- a whole run: an arm the judge cannot grade ends unscored and its decision inconclusive -------------

ANSWER = {"model-a": "An Annual membership is 180 alder crowns.", "model-b": "Zebra crossing, probably.",
          "model-c": "It depends on the Article."}


def _prereg(url: str) -> str:
    models = "".join(f'[models.{m}]\nbackend = "openai"\nsource = "{m}"\nbase_url = "{url}"\nfamily = "scripted"\n\n'
                     for m in ANSWER)
    arms = "".join(f'[[arms]]\nname = "{arm}"\nmodel = "{m}"\nquants = ["served"]\n'
                   'generation = { temperature = 0.0, max_tokens = 64, seed = 0 }\n\n'
                   for arm, m in (("base", "model-a"), ("trained", "model-b"), ("partial", "model-c")))
    return http_prereg("http-judge", url, models + arms,
                       [("H-trained", "base", "trained"), ("H-partial", "base", "partial")])


def test_run_with_an_ungradable_arm_is_inconclusive_not_zero(tmp_path):
    questions = load_questions([ROOT / "sealed" / "demo" / "sets" / "exam.jsonl"])[:10]
    hard = {q.question for q in questions[:3]}  # "partial" gives an ungradable answer to these 3 of 10

    def script(seen: Seen) -> Step:
        if seen.model != "judge-model":  # an arm answering
            ungradable = seen.model == "model-c" and any(q in seen.prompt for q in hard)
            return reply(ANSWER["model-b"] if ungradable else ANSWER[seen.model])
        if ANSWER["model-b"] in seen.prompt:
            return reply("I cannot grade this one, sorry.")  # nothing parseable, on every attempt
        return verdict(GOOD)

    exp, out = tmp_path / "exp", tmp_path / "out"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    key = "sentinel-not-a-real-key"
    with ScriptedServer(script, models=(*ANSWER, "judge-model")) as server:
        (exp / "prereg.toml").write_text(_prereg(server.openai_url))
        seal(exp)
        run = ("judge", "run", "--exp", str(exp), "--arms", "--limit", "10", "--out", str(out))
        r = cli(*run, "--quiet", env={"OPENAI_API_KEY": key}, timeout=120)
        # a run that decided nothing says so: exit 1 (max_unscored is a registered check), one line per hypothesis
        assert r.returncode == 1, r.stderr
        undecided = [line for line in r.stderr.splitlines() if "decided nothing" in line]
        assert undecided == [
            "check failed: H-trained decided nothing: unscored or failed answers (base 0%, trained 100%) exceed "
            "the registered max_unscored of 10%",
            "check failed: H-partial decided nothing: unscored or failed answers (base 0%, partial 30%) exceed "
            "the registered max_unscored of 10%"], r.stderr
        again = cli(*run, env={"OPENAI_API_KEY": key}, timeout=120)  # not quiet: the report, then the same lines
        assert again.returncode == 1 and "## Decisions" in again.stdout
        assert [line for line in again.stderr.splitlines() if "decided nothing" in line] == undecided
        v = cli("judge", "verify", str(out), timeout=120)
        assert v.returncode == 0, v.stderr
    assert all(s.headers["authorization"] == f"Bearer {key}" for s in server.seen)
    assert not any(key.encode() in p.read_bytes() for p in out.rglob("*") if p.is_file())  # never recorded

    numbers = json.loads((out / "numbers.json").read_text())
    cells = {c["arm"]: c for c in numbers["cells"]}
    assert cells["trained"]["unscored"] == 10 and cells["trained"]["scored"] == 0
    assert cells["trained"]["mean"] is None  # not 0.0
    assert cells["base"]["scored"] == 10 and cells["base"]["mean"] == 2
    assert cells["partial"]["unscored"] == 3 and cells["partial"]["scored"] == 7
    decisions = {c["id"]: c for c in numbers["comparisons"]}
    assert decisions["H-trained"]["verdict"] == "inconclusive"
    assert decisions["H-partial"]["verdict"] == "inconclusive"  # 30% unscored > the registered 10%
    assert "exceed the registered 10%" in decisions["H-partial"]["reason"]

    arm_of = {r["label"]: r["arm"] for _, r in jsonl.read(out / "blinding.jsonl")}
    for _, row in jsonl.read(out / "judgments.jsonl"):
        if arm_of[row["label"]] == "trained":
            assert row["score"] is None and row["error"]
            assert [a["raw"] for a in row["attempts"]] == ["I cannot grade this one, sorry."] * 2


def test_an_http_experiment_on_llama_server_runs_end_to_end_and_verifies(llama_server, tmp_path):
    """The normal path of a served experiment: one arm over the OpenAI route, one over the Messages route, the
    judge over the OpenAI route with its JSON-schema grammar; each cell's mean is recomputed here from the raw
    judgments, and `judge verify` passes."""
    url = llama_server.url
    models = (f'[models.a]\nbackend = "openai"\nsource = "smollm2-q8"\nbase_url = "{url}/v1"\nfamily = "smollm2"\n'
              'concurrency = 1\n\n'
              f'[models.b]\nbackend = "anthropic"\nsource = "smollm2-q8"\nbase_url = "{url}"\nfamily = "smollm2"\n'
              'sampling_params = true\nconcurrency = 1\n\n')
    arms = "".join(f'[[arms]]\nname = "{arm}"\nmodel = "{m}"\nquants = ["served"]\n'
                   'generation = { temperature = 0.0, max_tokens = 32, seed = 0 }\n\n'
                   for arm, m in (("base", "a"), ("trained", "b")))
    text = http_prereg("served", f"{url}/v1", models + arms, [("H1", "base", "trained")])
    text = text.replace('source = "judge-model"', 'source = "smollm2-q8"')
    exp, out = tmp_path / "exp", tmp_path / "out"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    (exp / "prereg.toml").write_text(text)
    seal(exp)
    keys = {"OPENAI_API_KEY": "sentinel", "ANTHROPIC_API_KEY": "sentinel"}
    r = cli("judge", "run", "--exp", str(exp), "--arms", "--limit", "2", "--out", str(out), "--quiet", env=keys,
            timeout=600)
    assert r.returncode == 0, r.stderr
    answers = [a for _, a in jsonl.read(out / "answers.jsonl")]
    assert sorted((a["arm"], a["effective"]["backend"]) for a in answers) == [
        ("base", "openai"), ("base", "openai"), ("trained", "anthropic"), ("trained", "anthropic")]
    assert all(a["status"] == "ok" and a["text"].strip() for a in answers)
    judgments = [j for _, j in jsonl.read(out / "judgments.jsonl")]
    assert len(judgments) == 4 and all(j["status"] == "scored" for j in judgments), judgments
    keys_by_label = {k["label"]: k for _, k in jsonl.read(out / "blinding.jsonl")}
    numbers = json.loads((out / "numbers.json").read_text())
    for cell in numbers["cells"]:
        scores = [j["score"] for j in judgments if keys_by_label[j["label"]]["arm"] == cell["arm"]]
        assert len(scores) == 2 and cell["mean"] == pytest.approx(sum(scores) / 2, abs=1e-12), cell
    v = cli("judge", "verify", str(out), timeout=300)
    assert v.returncode == 0, v.stdout + v.stderr
