"""Provider batch APIs (OpenAI Batch, Anthropic Message Batches) through the official SDKs, end to end.

`judge run` is the user's command, run as a subprocess against `support.batch_server`, which speaks the batch
routes as the installed SDK types define them and answers each batched request through llama-server's own
route (real completions). Everything asserted is counted at that server (batches submitted, requests run,
tokens it returned) or planted by the test (prices, failures, expiry, a held batch), never read from the code
under test.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import jsonl
from registration.seal import seal

from conftest import ROOT, cli
from support.batch_server import BatchServer

pytestmark = pytest.mark.integration

SET = ROOT / "sealed" / "demo" / "sets" / "exam.jsonl"
QUESTIONS = [json.loads(line) for line in SET.read_text().splitlines()[:3]]
ENV = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test"}
PRICE_IN, PRICE_OUT = 3.0, 15.0  # planted: USD per million tokens


def prereg(api: str, url: str, model_lines: str = "", arm_model_lines: str = "", glue: bool = False) -> str:
    """An experiment whose one plain arm and one judge are both served by `api` through its batch API."""
    base = f"{url}/v1" if api == "openai" else url
    sampling = "sampling_params = true\n" if api == "anthropic" else ""
    # llama-server's Messages route answers the judge's forced tool call with text, which never parses (see the
    # end-to-end test), so an Anthropic verdict's length tests nothing: 12 tokens instead of the rubric's 96
    judge_generation = "generation = { max_tokens = 12 }\n" if api == "anthropic" else ""
    return f"""[experiment]
name = "batch-{api}"
seed = 7
sets = ["sets/exam.jsonl"]

[models.armmodel]
backend = "{api}"
source = "arm-model"
base_url = "{base}"
family = "served"
provider_batch = true
batch_poll_s = 0.1
timeout_s = 60
{sampling}{arm_model_lines}
[models.judgemodel]
backend = "{api}"
source = "judge-model"
base_url = "{base}"
family = "judgefamily"
provider_batch = true
batch_poll_s = 0.1
timeout_s = 60
price_input = {PRICE_IN}
price_output = {PRICE_OUT}
{sampling}{model_lines}
[[arms]]
name = "plain"
model = "armmodel"
quants = ["served"]
{'glue = "glue.py:answer"' if glue else ''}
generation = {{ temperature = 0.0, max_tokens = 8, seed = 0, system = "Answer in one short sentence." }}

[judge]
rubric = "correctness"
verdict_attempts = 2

[judges.j]
model = "judgemodel"
{judge_generation}
[analysis]
resamples = 200
method = "percentile"
seed = 7
max_unscored = 1.0
"""


def experiment(tmp_path: Path, api: str, url: str, **kw) -> Path:
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    (exp / "prereg.toml").write_text(prereg(api, url, **kw))
    seal(exp)
    return exp


def run_args(exp: Path, out: Path) -> list[str]:
    return ["judge", "run", "--exp", str(exp), "--limit", "3", "--out", str(out), "--quiet"]


def env(tmp_path: Path) -> dict[str, str]:
    return {**ENV, "BLINDEVAL_CACHE": str(tmp_path / "cache")}


def records(path: Path) -> list[dict]:
    return [r for _, r in jsonl.read(path)]


def arm_keys(server: BatchServer) -> dict[str, str]:
    """question id -> custom_id of the arm's request, read from the requests the server received."""
    out = {}
    for b in server.batches.values():
        for req in b.requests:
            body = json.dumps(req.get("body") or req.get("params"))
            for q in QUESTIONS:
                if "Answer in one short sentence." in body and json.dumps(q["question"])[1:-1] in body:
                    out[q["id"]] = req["custom_id"]
    return out


def kill_while_held(server: BatchServer, exp: Path, out: Path, tmp_path: Path, batches: int) -> None:
    """Start `judge run`, let it submit `batches` batches the server holds, and SIGKILL it while it polls."""
    server.hold = True
    e = {**os.environ, **env(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", *run_args(exp, out)], cwd=ROOT, env=e,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 300
        while not (len(server.batches) >= batches and (out / "batches.jsonl").exists()) and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # polling the held batches
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def llama(llama_server):
    return llama_server.url


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_judge_run_through_batches_end_to_end(api, llama, tmp_path):
    with BatchServer(llama, models=("arm-model", "judge-model")) as server:
        exp = experiment(tmp_path, api, server.url)
        out = tmp_path / "run"
        r = cli(*run_args(exp, out), env=env(tmp_path), timeout=600)
        assert r.returncode == 0, r.stderr
        assert server.sync_calls == 0  # nothing was asked outside a batch
        answers, verdicts = records(out / "answers.jsonl"), records(out / "judgments.jsonl")
        assert [a["status"] for a in answers] == ["ok"] * 3 and len(verdicts) == 3
        assert all(v["status"] in ("scored", "unscored") for v in verdicts)
        ran = {f["custom_id"]: f for f in server.forwarded}
        assert len(ran) == len(server.forwarded)  # each request ran once
        # every call of every row was answered by a batch the server ran, with the tokens the server returned
        for row in answers + verdicts:
            assert set(row["calls"]) <= set(ran) and row["cached_calls"] == 0
            assert row["prompt_tokens"] == sum(ran[k]["input_tokens"] for k in row["calls"])
            assert row["completion_tokens"] == sum(ran[k]["output_tokens"] for k in row["calls"])
        # rounds: the arm's batch, the judge's first attempts, then only the verdicts that did not parse
        # (llama-server's JSON-schema grammar makes each OpenAI verdict parse at once; its Messages route answers a
        # forced tool call with text, which does not parse, so every Anthropic verdict takes its second attempt)
        batches = list(server.batches.values())
        second = [v for v in verdicts if len(v["attempts"]) == 2]
        assert len(second) == (0 if api == "openai" else 3)
        assert [len(b.requests) for b in batches] == [3, 3] + ([3] if second else [])
        assert {req["custom_id"] for req in batches[1].requests} == {v["calls"][0] for v in verdicts}
        if second:  # the second round asked exactly the second attempts
            assert {req["custom_id"] for req in batches[2].requests} == {v["calls"][1] for v in second}
        log = records(out / "batches.jsonl")
        assert [(e["event"], e.get("batch_id")) for e in log] == [(ev, i) for b in batches for ev, i in (
            ("submitting", None), ("submitted", b.id), ("ended", b.id))]
        assert all(log[i]["tag"] == log[i + 1]["tag"] and log[i]["keys"] == log[i + 1]["keys"]
                   for i in range(0, len(log), 3))  # each batch id recorded under the intent written before it
        # cost: the judge's tokens as the server counted them, at half the planted prices
        judge_in = sum(ran[k]["input_tokens"] for v in verdicts for k in v["calls"])
        judge_out = sum(ran[k]["output_tokens"] for v in verdicts for k in v["calls"])
        usd = 0.5 * (judge_in * PRICE_IN + judge_out * PRICE_OUT) / 1e6
        report = (out / "report.md").read_text()
        line = next(x for x in report.splitlines() if x.startswith("| judge j |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[3:] == [str(judge_in), str(judge_out), f"{judge_in} / {judge_out}", f"{usd:.6f}"]
        arm_line = next(x for x in report.splitlines() if x.startswith("| arm plain |"))
        assert arm_line.rstrip().endswith("| – |")  # no price registered for the arm's model: tokens only
        v = cli("judge", "verify", str(out), env=env(tmp_path), timeout=300)
        assert v.returncode == 0, v.stderr
        # a batches.jsonl that no longer says which calls a batch answered no longer gives run.json's cost
        log_text = (out / "batches.jsonl").read_text().replace('"succeeded":', '"succeeded_":')
        (out / "batches.jsonl").write_text(log_text)
        v = cli("judge", "verify", str(out), env=env(tmp_path), timeout=300)
        assert v.returncode == 1 and "run.json cost of judge j: batch_input_tokens" in v.stdout + v.stderr


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_killed_run_follows_its_recorded_batch_and_pays_nothing_twice(api, llama, tmp_path):
    with BatchServer(llama, models=("arm-model", "judge-model")) as server:
        exp = experiment(tmp_path, api, server.url)
        out = tmp_path / "run"
        kill_while_held(server, exp, out, tmp_path, batches=1)
        (first,) = server.batches.values()
        log = records(out / "batches.jsonl")
        assert [(x["event"], x.get("batch_id")) for x in log] == [("submitting", None), ("submitted", first.id)]
        assert sorted(log[1]["keys"]) == sorted(req["custom_id"] for req in first.requests)
        assert not server.forwarded  # held: nothing ran yet
        server.release()
        while not first.ended:
            time.sleep(0.1)
        r = cli(*run_args(exp, out), env=env(tmp_path), timeout=600)
        assert r.returncode == 0, r.stderr
        # no second arm batch: the recorded one was followed; each request ran (was paid) once
        arm_batches = [b for b in server.batches.values() if "Answer in one short sentence." in json.dumps(b.requests)]
        assert arm_batches == [first]
        ids = [f["custom_id"] for f in server.forwarded]
        assert len(ids) == len(set(ids)) and server.sync_calls == 0
        assert [a["status"] for a in records(out / "answers.jsonl")] == ["ok"] * 3
        assert ("ended", first.id) in [(x["event"], x.get("batch_id")) for x in records(out / "batches.jsonl")]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_calls_over_the_registered_limit_go_in_several_batches_all_followed_after_a_kill(api, llama, tmp_path):
    """Planted: `batch_max_requests = 2` on both models, so each round's 3 calls are cut into batches of 2 and 1,
    both submitted (and recorded) before any wait. A kill while they are held, then a re-run: both followed, none
    submitted again, each request run once."""
    with BatchServer(llama, models=("arm-model", "judge-model")) as server:
        exp = experiment(tmp_path, api, server.url, model_lines="batch_max_requests = 2\n",
                         arm_model_lines="batch_max_requests = 2\n")
        out = tmp_path / "run"
        kill_while_held(server, exp, out, tmp_path, batches=2)
        first = list(server.batches.values())
        assert [len(b.requests) for b in first] == [2, 1]
        log = [x for x in records(out / "batches.jsonl") if x["event"] == "submitted"]
        assert [x["batch_id"] for x in log] == [b.id for b in first]
        server.release()
        r = cli(*run_args(exp, out), env=env(tmp_path), timeout=600)
        assert r.returncode == 0, r.stderr
        batches = list(server.batches.values())
        assert batches[:2] == first and all(len(b.requests) <= 2 for b in batches)
        arm = [b for b in batches if "Answer in one short sentence." in json.dumps(b.requests)]
        assert arm == first  # the arm's calls: the two recorded batches, followed, not submitted again
        ids = [f["custom_id"] for f in server.forwarded]
        assert len(ids) == len(set(ids)) and server.sync_calls == 0
        assert [a["status"] for a in records(out / "answers.jsonl")] == ["ok"] * 3
        assert len(records(out / "judgments.jsonl")) == 3
        assert cli("judge", "verify", str(out), env=env(tmp_path), timeout=300).returncode == 0


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_failed_request_is_an_error_row_and_the_rerun_retries_only_it(api, llama, tmp_path):
    """Planted: the arm's request for q02 and the judge's first request on the answer to q03 fail in run 1."""
    text = {q["id"]: json.dumps(q["question"])[1:-1] for q in QUESTIONS}

    def planted(cid: str, body: dict) -> bool:
        sent = json.dumps(body)
        arm = "Answer in one short sentence." in sent
        return text["q02"] in sent if arm else text["q03"] in sent

    with BatchServer(llama, models=("arm-model", "judge-model")) as server:
        exp = experiment(tmp_path, api, server.url)
        out = tmp_path / "run"
        server.fail = planted
        r1 = cli(*run_args(exp, out), env=env(tmp_path), timeout=600)
        assert r1.returncode == 0, r1.stderr
        answers, verdicts = records(out / "answers.jsonl"), records(out / "judgments.jsonl")
        errors = [a for a in answers if a["status"] == "error"]
        assert [a["question_id"] for a in errors] == ["q02"] and len(answers) == 3
        assert errors[0]["error"]["kind"] == "batch" and "scripted failure" in errors[0]["error"]["message"]
        assert errors[0]["calls"] == [] and server.sync_calls == 0  # not paid again synchronously
        judge_errors = [v for v in verdicts if v["status"] == "error"]
        assert [v["question_id"] for v in judge_errors] == ["q03"] and len(verdicts) == 2
        assert "scripted failure" in judge_errors[0]["error"]
        assert len(server.failed) == 2
        paid_before = {f["custom_id"] for f in server.forwarded}
        before = len(server.batches)
        server.fail = lambda cid, body: False
        r2 = cli(*run_args(exp, out), env=env(tmp_path), timeout=600)
        assert r2.returncode == 0, r2.stderr
        new = list(server.batches.values())[before:]
        assert [req["custom_id"] for req in new[0].requests] == [arm_keys(server)["q02"]] == server.failed[:1]
        # the judge's first round: the failed verdict again, and the verdict on q02's new answer; nothing paid twice
        asked = {req["custom_id"] for req in new[1].requests}
        assert server.failed[1] in asked and len(asked) == 2
        assert not {req["custom_id"] for b in new for req in b.requests} & paid_before
        assert server.sync_calls == 0
        for name in ("answers.jsonl", "judgments.jsonl"):
            rows = records(out / name)
            errors = {r["question_id"]: line for line, r in enumerate(rows, start=1) if r["status"] == "error"}
            retries = {r["question_id"]: r["retry_of"] for r in rows if "retry_of" in r}
            assert retries == errors, name  # each error row replaced once, pointing at its line
            assert all(r["status"] != "error" for r in rows if "retry_of" in r)


def test_a_refused_submission_makes_error_rows_and_the_rerun_submits_them(llama, tmp_path):
    with BatchServer(llama, models=("arm-model", "judge-model")) as server:
        exp = experiment(tmp_path, "anthropic", server.url)
        out = tmp_path / "run"
        server.refuse_submissions = 1  # the arm's batch is refused: no batch exists, nothing ran
        r1 = cli(*run_args(exp, out), env=env(tmp_path), timeout=600)
        assert r1.returncode == 0, r1.stderr
        answers = records(out / "answers.jsonl")
        assert [(a["status"], a["error"]["kind"]) for a in answers] == [("error", "batch")] * 3
        assert all("could not be submitted" in a["error"]["message"] for a in answers)
        assert not server.batches and server.sync_calls == 0
        assert [x["event"] for x in records(out / "batches.jsonl")] == ["submitting"]  # the intent alone
        r2 = cli(*run_args(exp, out), env=env(tmp_path), timeout=600)
        assert r2.returncode == 0, r2.stderr
        assert [len(b.requests) for b in server.batches.values()][:2] == [3, 3]
        assert [a["status"] for a in records(out / "answers.jsonl")[3:]] == ["ok"] * 3


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("stop", ["expired", "cancelled"])
def test_an_expired_or_cancelled_batch_is_resubmitted_for_exactly_its_missing_requests(api, stop, llama, tmp_path):
    with BatchServer(llama, models=("arm-model", "judge-model")) as server:
        exp = experiment(tmp_path, api, server.url)
        out = tmp_path / "run"
        server.stop_after, server.stop_as = 1, stop  # the first batch runs one request; the other two never run
        r = cli(*run_args(exp, out), env=env(tmp_path), timeout=600)
        assert r.returncode == 0, r.stderr
        first, second = list(server.batches.values())[:2]
        ran_first = {f["custom_id"] for f in server.forwarded if f["batch"] == first.id}
        assert len(ran_first) == 1
        assert sorted(req["custom_id"] for req in second.requests) == sorted(
            req["custom_id"] for req in first.requests if req["custom_id"] not in ran_first)
        assert [a["status"] for a in records(out / "answers.jsonl")] == ["ok"] * 3
        ids = [f["custom_id"] for f in server.forwarded]
        assert len(ids) == len(set(ids)) and server.sync_calls == 0
        ended = [x for x in records(out / "batches.jsonl") if x["event"] == "ended"]
        assert sorted(ended[0]["missing"]) == sorted(req["custom_id"] for req in second.requests)


def _alive_in_group(pgid: int) -> bool:
    """Is any process of the group still running (a zombie is dead)?"""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _decoy(server: BatchServer, api: str, like: list[dict]) -> None:
    """Someone else's batch, submitted straight through the SDK after the kill: as many requests, no tag, other
    custom_ids (each request cut to one token)."""
    if api == "openai":
        import openai

        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
        lines = [{**req, "custom_id": f"decoy-{i}", "body": {**req["body"], "max_tokens": 1}}
                 for i, req in enumerate(like)]
        upload = client.files.create(file=("d.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode()),
                                     purpose="batch")
        client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
    else:
        import anthropic

        client = anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0)
        client.messages.batches.create(requests=[{"custom_id": f"decoy-{i}", "params": {**req["params"],
                                                                                          "max_tokens": 1}}
                                                 for i, req in enumerate(like)])


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_kill_between_the_provider_accepting_a_batch_and_its_record_pays_it_once(api, llama, tmp_path):
    """`arms collect` (the arm's calls alone, no judging: the same batch path as `judge run`'s first stage, at a
    third of its cost) is killed with its worker while the provider accepts its batch, before the answer with the
    batch id reaches it: batches.jsonl holds the intent alone. The re-run finds the batch in the provider's list
    (OpenAI: by its metadata tag; Anthropic: by its time, size and custom_ids, past a decoy of the same size
    submitted in between) and follows it: no second batch, each request run once."""
    with BatchServer(llama, models=("arm-model", "judge-model")) as server:
        exp = experiment(tmp_path, api, server.url)
        out = tmp_path / "run"
        collect = ["arms", "collect", "--exp", str(exp), "--arms", "plain", "--limit", "3", "--out", str(out),
                   "--quiet"]
        proc = subprocess.Popen([sys.executable, "-m", *collect], cwd=ROOT,
                                env={**os.environ, **env(tmp_path)}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        killed: list[str] = []
        done = threading.Event()

        def kill(batch) -> None:  # runs in the server once the batch is accepted, before its answer is sent
            if killed or done.is_set():
                return
            os.killpg(proc.pid, signal.SIGKILL)  # the command and its worker process
            proc.wait()
            deadline = time.time() + 30
            while _alive_in_group(proc.pid) and time.time() < deadline:  # dead before the answer leaves
                time.sleep(0.02)
            killed.append(batch.id)
            done.set()

        server.on_submit = kill
        try:
            proc.wait(timeout=300)
            assert done.wait(60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        server.on_submit = lambda batch: None
        (first,) = server.batches.values()
        assert killed == [first.id]
        log = records(out / "batches.jsonl")
        assert [x["event"] for x in log] == ["submitting"]  # the intent, never the batch id
        assert sorted(log[0]["keys"]) == sorted(req["custom_id"] for req in first.requests)
        if api == "openai":
            assert first.metadata == {"blindeval_tag": log[0]["tag"]}
        _decoy(server, api, first.requests)
        r = cli(*collect, env=env(tmp_path), timeout=600)
        assert r.returncode == 0, r.stderr
        batches = [b for b in server.batches.values() if not b.requests[0]["custom_id"].startswith("decoy")]
        assert batches == [first]  # adopted, not paid again
        ids = [f["custom_id"] for f in server.forwarded]
        assert len(ids) == len(set(ids)) and server.sync_calls == 0
        assert [a["status"] for a in records(out / "answers.jsonl")] == ["ok"] * 3
        log = records(out / "batches.jsonl")
        found = [x for x in log if x["event"] == "submitted" and x["batch_id"] == first.id]
        assert len(found) == 1 and found[0]["tag"] == log[0]["tag"] and found[0]["found_by"] == "listing"


def test_batch_on_a_local_model_is_refused_naming_the_field(tmp_path):
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    text = (exp / "prereg.toml").read_text()
    text = text.replace('family = "smollm2"\n', 'family = "smollm2"\nprovider_batch = true\n', 1)
    (exp / "prereg.toml").write_text(text)
    seal(exp)
    r = cli("judge", "run", "--exp", str(exp), "--limit", "1", "--out", str(tmp_path / "run"), "--quiet",
            env={"BLINDEVAL_CACHE": str(tmp_path / "cache")}, timeout=120)
    assert r.returncode == 2, r.stderr
    line = text.splitlines().index("provider_batch = true") + 1
    assert f"prereg.toml:{line}: field 'provider_batch'" in r.stderr and "[models.smollm2-135m]" in r.stderr
    assert "openai and anthropic" in r.stderr and "Traceback" not in r.stderr


def test_a_price_without_its_pair_is_refused(tmp_path):
    exp = experiment(tmp_path, "openai", "http://127.0.0.1:9")
    text = (exp / "prereg.toml").read_text().replace(f"price_output = {PRICE_OUT}\n", "")
    (exp / "prereg.toml").write_text(text)
    seal(exp)
    r = cli("judge", "run", "--exp", str(exp), "--limit", "1", "--out", str(tmp_path / "run"), "--quiet",
            env=env(tmp_path), timeout=120)
    assert r.returncode == 2 and "field 'price_output'" in r.stderr and "[models.judgemodel]" in r.stderr, r.stderr


def test_glue_on_a_batch_model_is_refused_as_a_gap(tmp_path):
    exp = experiment(tmp_path, "openai", "http://127.0.0.1:9", glue=True)
    r = cli("judge", "run", "--exp", str(exp), "--limit", "1", "--out", str(tmp_path / "run"), "--quiet",
            env=env(tmp_path), timeout=120)
    assert r.returncode == 2, r.stderr
    assert "glue" in r.stderr and "batch = true" in r.stderr and "gap" in r.stderr and "Traceback" not in r.stderr


def test_results_fetched_but_never_written_are_fetched_again_not_paid_again(llama, tmp_path):
    """A run killed after its batches ended but before its rows were written: the ended batches are recorded,
    the rows and the call cache are not. Planted as a fresh folder and an empty cache holding only the first
    run's batches.jsonl: the re-run fetches the recorded results and submits nothing."""
    with BatchServer(llama, models=("arm-model", "judge-model")) as server:
        exp = experiment(tmp_path, "openai", server.url)
        r1 = cli(*run_args(exp, tmp_path / "run"), env=env(tmp_path), timeout=600)
        assert r1.returncode == 0, r1.stderr
        batches, forwarded = len(server.batches), len(server.forwarded)
        again = tmp_path / "again"
        again.mkdir()
        shutil.copy(tmp_path / "run" / "batches.jsonl", again / "batches.jsonl")
        r2 = cli(*run_args(exp, again), env={**env(tmp_path), "BLINDEVAL_CACHE": str(tmp_path / "empty-cache")},
                 timeout=600)
        assert r2.returncode == 0, r2.stderr
        assert (len(server.batches), len(server.forwarded), server.sync_calls) == (batches, forwarded, 0)
        for name in ("answers.jsonl", "judgments.jsonl"):
            first, second = records(tmp_path / "run" / name), records(again / name)
            assert [r.get("text", r.get("score")) for r in second] == [r.get("text", r.get("score")) for r in first]


def _planted(api: str, body: dict) -> dict:
    """A completion whose text is the request's last user message, as the provider would return it."""
    text = body["messages"][-1]["content"]
    if api == "openai":
        return {"id": "chatcmpl-p", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    return {"id": "msg_p", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}


BREAKS = ["\u2028", "\u2029", "\x85", "\r", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]


@pytest.fixture(scope="module")
def planted_server():
    with BatchServer(None, models=("m",), answer=_planted) as server:
        yield server


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.one_of(st.sampled_from(BREAKS), st.text(max_size=4)), min_size=1,
                               max_size=5).map("".join), min_size=1, max_size=3, unique=True))
def test_results_holding_any_line_separator_are_read_back_exactly(api, texts, planted_server):
    """Replies written raw into the provider's results (UTF-8 as it is: U+2028, U+2029, U+0085 unescaped) come
    back as the texts they were, through the SDK and each backend's own reading of the results; a reply that is
    only whitespace comes back as no answer."""
    from models.backends.anthropic import AnthropicBackend, AnthropicConfig
    from models.backends.base import Generation, Reply, Request
    from models.backends.openai import OpenAIBackend, OpenAIConfig

    backend = (OpenAIBackend(OpenAIConfig("m", base_urls=(f"{planted_server.url}/v1",))) if api == "openai"
               else AnthropicBackend(AnthropicConfig("m", base_url=planted_server.url)))
    try:
        requests = {f"{i:064x}": Request((("user", t),), Generation(max_tokens=8)) for i, t in enumerate(texts)}
        batch_id = backend.submit_batch(requests, "blindeval-test")
        while not backend.batch_status(batch_id)[0]:
            time.sleep(0.02)
        results = backend.batch_results(batch_id, list(requests))
        sent = {k: req.messages[-1][1] for k, req in requests.items()}
        # A reply of only whitespace is no answer (an error row, asked again); every other text comes back exactly.
        assert {k: r.text for k, r in results.items() if isinstance(r, Reply)} == {
            k: t for k, t in sent.items() if t.strip()}
        assert {k for k, r in results.items() if not isinstance(r, Reply)} == {k for k, t in sent.items()
                                                                                  if not t.strip()}
        assert backend.batch_custom_ids(batch_id) == set(requests)
    finally:
        backend.close()
