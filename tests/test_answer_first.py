"""Answer-first rubrics (judge.judging.answer_first): the judge writes its own answer before it reads a candidate's.

The end-to-end test runs an answer-first experiment whose judge is llama.cpp's own server, reached through a
recorder on 127.0.0.1 that forwards every request and keeps what the server received and answered; the arms are
scripted to answer with a planted string found nowhere else, so a first call that showed a candidate would carry it.
"""
from __future__ import annotations

import json
import re
import shutil
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import jsonl
from core.errors import BadInput
from judge.judging.answer_first import FIRST_SYSTEM, check, first_request
from judge.judging.blinding import BlindItem
from judge.judging.calls import judge_all
from judge.verify.replies import Replies
from judge.verify.withheld import Salts, redact_judgment
from models.backends.base import Reply
from models.backends.openai import OpenAIBackend, OpenAIConfig
from models.cache import CallCache, call_key
from registration.questions import load_questions
from registration.rubric import load_rubric
from registration.seal import seal

from conftest import ROOT, cli, free_port, http_prereg
from support.scripted_server import ScriptedServer, Seen, Step, fail, reply, verdict

RUBRIC_TOML = (ROOT / "rubrics" / "correctness.toml").read_text()


def answer_first_rubric(folder: Path, name: str, line: str) -> Path:
    """The shipped correctness rubric with `line` added at its top, as rubric `name` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "rubrics" / "correctness.j2", folder / "correctness.j2")
    (folder / f"{name}.toml").write_text(line + "\n" + RUBRIC_TOML.replace('name = "correctness"', f'name = "{name}"'))
    return folder


@pytest.mark.unit
@pytest.mark.parametrize("line, message", [
    ('answer_first = "sometimes"', "must be one of 'two_calls', 'one_reply'"),
    ("answer_first = true", "must be a string, got True"),
])
def test_a_bad_answer_first_is_refused_naming_file_line_and_key(tmp_path, line, message):
    folder = answer_first_rubric(tmp_path / "rubrics", "bad", line)
    with pytest.raises(BadInput) as e:
        load_rubric("bad", folder)
    assert e.value.field == "answer_first" and e.value.line == 1 and e.value.file == str(folder / "bad.toml")
    assert message in e.value.message


@pytest.mark.unit
def test_one_reply_opens_the_schema_with_the_judges_answer_and_refuses_a_schema_declaring_it(tmp_path):
    plain = load_rubric("correctness")
    one = load_rubric("one", answer_first_rubric(tmp_path / "rubrics", "one", 'answer_first = "one_reply"'))
    assert list(one.schema["properties"]) == ["judge_answer", *plain.schema["properties"]]
    assert one.schema["required"] == ["judge_answer", *plain.schema["required"]]
    assert one.schema["properties"]["judge_answer"] == {"type": "string"} and not plain.answer_first
    two = load_rubric("two", answer_first_rubric(tmp_path / "rubrics", "two", 'answer_first = "two_calls"'))
    assert two.schema == plain.schema and two.answer_first == "two_calls"
    clash = tmp_path / "clash"
    answer_first_rubric(clash, "clash", 'answer_first = "one_reply"')
    text = (clash / "clash.toml").read_text() + '\n[schema.properties.judge_answer]\ntype = "string"\n'
    (clash / "clash.toml").write_text(text)
    with pytest.raises(BadInput) as e:
        load_rubric("clash", clash)
    assert e.value.field == "answer_first" and e.value.line == 1


@pytest.mark.integration
def test_judge_run_refuses_a_bad_answer_first_with_exit_2_naming_the_rubric_line(tmp_path):
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    answer_first_rubric(exp / "rubrics", "firstly", "\n\nanswer_first = 2")
    prereg = (exp / "prereg.toml").read_text()
    (exp / "prereg.toml").write_text(re.sub(r'(?m)^rubric = "correctness"$', 'rubric = "firstly"', prereg))
    seal(exp)
    r = cli("judge", "run", "--exp", str(exp), "--limit", "1", "--out", str(tmp_path / "out"), "--quiet", timeout=120)
    assert r.returncode == 2, r.stderr
    assert f"{exp / 'rubrics' / 'firstly.toml'}:3" in r.stderr and "answer_first" in r.stderr
    assert "Traceback" not in r.stderr


class Recorder(ThreadingHTTPServer):
    """Forwards every request to `target` and keeps each JSON request body with the JSON the target answered."""

    daemon_threads = True

    def __init__(self, target: str):
        self.target = target
        self.seen: list[tuple[dict, dict]] = []
        super().__init__(("127.0.0.1", free_port()), _Forward)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _forward(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        request = urllib.request.Request(self.server.target + self.path, data=body, method=self.command,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=600) as r:
                status, data = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, data = e.code, e.read()
        if body:
            self.server.seen.append((json.loads(body), json.loads(data)))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _forward

    def log_message(self, *args) -> None:
        pass


PLANTED = {"base": "Kestrel-planted-9QX4 says: it is 180 alder crowns.",
           "trained": "Osprey-planted-7ZW2 says: it depends on the Article."}


@pytest.mark.integration
def test_an_answer_first_rubric_runs_end_to_end_on_llama_server_and_verify_rederives_it(llama_server, tmp_path):
    """Two arms (scripted, each answer carrying a planted string) on 2 questions, judged by llama.cpp's server with the
    shipped `two_calls` rubric (correctness-first): the first calls carry each question and its reference and never a
    candidate, one per question however many arms answered it, at the rubric's answer_max_tokens; each verdict
    records the judge's answer as the server wrote it and its grading prompt shows it; verify passes, and fails naming
    the record when the recorded answer is edited."""
    exp, out = tmp_path / "exp", tmp_path / "out"
    shutil.copytree(ROOT / "sealed" / "demo", exp)  # judged by the shipped rubric rubrics/correctness-first.toml
    recorder = Recorder(llama_server.url)
    model_of = {"base": "model-a", "trained": "model-b"}

    def script(seen: Seen) -> Step:
        return reply(PLANTED[next(a for a, m in model_of.items() if m == seen.model)])

    try:
        with ScriptedServer(script, models=tuple(model_of.values())) as arms_server:
            models = "".join(f'[models.{m}]\nbackend = "openai"\nsource = "{m}"\nbase_url = "{arms_server.openai_url}"'
                             f'\nfamily = "scripted"\n\n' for m in model_of.values())
            arms = "".join(f'[[arms]]\nname = "{a}"\nmodel = "{m}"\nquants = ["served"]\n'
                           'generation = { temperature = 0.0, max_tokens = 32, seed = 0 }\n\n'
                           for a, m in model_of.items())
            text = http_prereg("answer-first", f"{recorder.url}/v1", models + arms, [("H1", "base", "trained")])
            text = text.replace('source = "judge-model"', 'source = "smollm2-q8"')
            (exp / "prereg.toml").write_text(text.replace('rubric = "correctness"', 'rubric = "correctness-first"'))
            seal(exp)
            r = cli("judge", "run", "--exp", str(exp), "--arms", "--limit", "2", "--out", str(out), "--quiet",
                    env={"OPENAI_API_KEY": "sentinel"}, timeout=600)
            assert r.returncode in (0, 1), r.stderr  # 1: a registered check may fail on 2 questions; never 2
            assert "Traceback" not in r.stderr
    finally:
        recorder.shutdown()

    questions = {q.id: q for q in load_questions([exp / "sets" / "exam.jsonl"])}
    judged = [(body, answer) for body, answer in recorder.seen if "messages" in body]
    first = [(b, a) for b, a in judged if b["messages"][0]["content"] == FIRST_SYSTEM]
    rubric = load_rubric("correctness-first")
    grading = rubric.system
    second = [(b, a) for b, a in judged if b["messages"][0]["content"] == grading]
    assert len(first) + len(second) + sum("response_format" not in b for b, _ in judged if len(b["messages"]) == 1) \
        == len(judged)  # besides the two kinds of judge call: the settings read back, one message without a schema
    judgments = [j for _, j in jsonl.read(out / "judgments.jsonl")]
    assert len(judgments) == 4 and len(second) >= 4, judgments
    asked = {j["question_id"] for j in judgments}
    assert len(asked) == 2
    # one first call per question and judge, though two arms answered each
    assert len(first) == 2
    for body, _ in first:
        prompt = json.dumps(body["messages"])
        assert not any(p in prompt for p in PLANTED.values()) and "planted" not in prompt
        assert "response_format" not in body  # a free answer, not a verdict
        assert body["max_tokens"] == rubric.answer_max_tokens == 128  # its own limit, not the verdict's
    by_question = {}
    for qid in asked:
        q = questions[qid]
        mine = [(b, a) for b, a in first if q.question in b["messages"][1]["content"]]
        assert len(mine) == 1 and q.reference in mine[0][0]["messages"][1]["content"]
        by_question[qid] = mine[0][1]["choices"][0]["message"]["content"]
    # the judge's answer is recorded with each verdict, as the server wrote it, and its grading prompt showed it
    for j in judgments:
        own = j["judge_answer"]
        assert own["form"] == "two_calls" and own["text"] == by_question[j["question_id"]], j
        shown = [b for b, _ in second if own["text"] in b["messages"][1]["content"]
                 and questions[j["question_id"]].question in b["messages"][1]["content"]]
        assert shown and all("written before you saw the candidate" in b["messages"][1]["content"] for b in shown)
    assert len({j["judge_answer"]["call"] for j in judgments}) == 2
    assert all(any(p in b["messages"][1]["content"] for p in PLANTED.values()) for b, _ in second)

    # the cost counts each first call once, with the tokens the server said it used
    cost = next(c for c in json.loads((out / "run.json").read_text())["cost"] if c["role"] == "judge")
    assert cost["input_tokens"] == sum(a["usage"]["prompt_tokens"] for _, a in first + second)
    assert cost["output_tokens"] == sum(a["usage"]["completion_tokens"] for _, a in first + second)

    v = cli("judge", "verify", str(out), timeout=300)
    assert v.returncode == 0, v.stdout + v.stderr
    # shown beside the verdict: review.md as the run wrote it, and the review page `judge view` writes
    review = (out / "review.md").read_text()
    assert "Its own answer, written before it saw the candidate:" in review
    assert all(text in review for text in by_question.values())
    assert cli("judge", "view", str(out), timeout=120).returncode == 0
    page = (out / "review.html").read_text()
    for text in by_question.values():
        embedded = json.dumps(text, ensure_ascii=True)[1:-1]
        assert embedded.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") in page
    assert '"judge_answer":' in page and "the judge's own answer, written first" in page
    # published (nothing private: verbatim), the bundle verifies from itself
    assert cli("judge", "publish", str(out), "--out", str(tmp_path / "bundle"), timeout=300).returncode == 0
    v = cli("judge", "verify", str(tmp_path / "bundle"), timeout=300)
    assert v.returncode == 0, v.stdout + v.stderr

    lines = (out / "judgments.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    row["judge_answer"]["text"] = row["judge_answer"]["text"] + " (edited)"
    lines[1] = json.dumps(row, ensure_ascii=False)
    (out / "judgments.jsonl").write_text("\n".join(lines) + "\n")
    v = cli("judge", "verify", str(out), timeout=300)
    assert v.returncode == 1, v.stdout + v.stderr
    said = v.stdout + v.stderr
    assert "judgments.jsonl:2: field 'judge_answer.text'" in said, said


def _judge(rubric, server: ScriptedServer, out: Path, cache: Path, items: list) -> list[dict]:
    backend = OpenAIBackend(OpenAIConfig(model="judge", base_urls=(server.openai_url,), attempts=1, timeout_s=10))
    try:
        judge_all("j", backend, rubric, items, CallCache(cache), out, max_attempts=2, progress=False)
    finally:
        backend.close()
    return [r for _, r in jsonl.read(out)]


ITEM = BlindItem("Lq01", "q01", "How much does an Annual membership cost?", "180 alder crowns (Article 1.4).",
                 "It costs 180 alder crowns.")


@pytest.mark.integration
def test_one_reply_records_the_judges_answer_written_before_its_grade_and_verify_catches_an_edit(tmp_path):
    rubric = load_rubric("one", answer_first_rubric(tmp_path / "rubrics", "one", 'answer_first = "one_reply"'))
    fields = {"judge_answer": "An Annual membership is 180 alder crowns.", "rationale": "Matches.", "score": 2,
              "harmful": False}
    with ScriptedServer([verdict(fields)]) as server:
        [row] = _judge(rubric, server, tmp_path / "judgments.jsonl", tmp_path / "calls.sqlite", [ITEM])
    asked = server.seen[0].body["response_format"]["json_schema"]["schema"]  # the schema the judge was sent
    assert list(asked["properties"])[0] == "judge_answer" and asked["required"][0] == "judge_answer"
    assert len(server.seen) == 1  # one call: no first call in this form
    assert row["status"] == "scored" and row["judge_answer"] == {
        "form": "one_reply", "text": fields["judge_answer"], "call": None, "cached": False, "prompt_tokens": 0,
        "completion_tokens": 0}
    assert check(row, rubric, ITEM.question, ITEM.reference, None, None, "j:1", row["fields"]) == (None, [])
    edited = {**row, "judge_answer": {"form": "one_reply", "text": "Something else."}}
    own, found = check(edited, rubric, ITEM.question, ITEM.reference, None, None, "j:1", row["fields"])
    assert [f for f, _ in found] == ["judge_answer"]


@pytest.mark.integration
def test_a_failed_first_call_is_an_error_verdict_asked_again_by_the_next_run(tmp_path):
    """The judge's own answer is a call like any other: when it fails, the verdict is an `error` row (never a score,
    and its candidate never sent); the next run asks again and appends the verdict with `retry_of`."""
    rubric = load_rubric("two", answer_first_rubric(tmp_path / "rubrics", "two", 'answer_first = "two_calls"'))
    out, cache = tmp_path / "judgments.jsonl", tmp_path / "calls.sqlite"
    with ScriptedServer([fail(500)]) as server:
        [row] = _judge(rubric, server, out, cache, [ITEM])
    assert row["status"] == "error" and row["score"] is None and "own answer" in row["error"]
    assert "judge_answer" not in row and len(server.seen) == 1 and ITEM.answer not in server.seen[0].prompt

    good = {"rationale": "Matches.", "score": 2, "harmful": False}
    with ScriptedServer([reply("Mine: 180 alder crowns."), verdict(good)]) as server:
        rows = _judge(rubric, server, out, cache, [ITEM])
    first, graded = server.seen
    assert ITEM.answer not in first.prompt and ITEM.question in first.prompt and "response_format" not in first.body
    assert "Mine: 180 alder crowns." in graded.prompt and ITEM.answer in graded.prompt
    assert rows[1]["status"] == "scored" and rows[1]["retry_of"] == 1
    assert rows[1]["judge_answer"]["text"] == "Mine: 180 alder crowns."


@pytest.mark.integration
def test_two_calls_through_a_provider_batch_ask_the_first_calls_in_a_batch_of_their_own(llama_server, tmp_path):
    """A judge registered with `batch = true`: its first calls go in a batch before the verdicts' (never sent
    synchronously), one per question, none holding an answer; the verdicts record them and verify passes."""
    from test_batch_api import ENV, prereg

    from support.batch_server import BatchServer

    exp, out = tmp_path / "exp", tmp_path / "run"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    answer_first_rubric(exp / "rubrics", "firstly", 'answer_first = "two_calls"')
    env = {**ENV, "BLINDEVAL_CACHE": str(tmp_path / "cache")}
    with BatchServer(llama_server.url, models=("arm-model", "judge-model")) as server:
        (exp / "prereg.toml").write_text(prereg("openai", server.url).replace('rubric = "correctness"',
                                                                              'rubric = "firstly"'))
        seal(exp)
        r = cli("judge", "run", "--exp", str(exp), "--limit", "3", "--out", str(out), "--quiet", env=env, timeout=600)
        assert r.returncode == 0, r.stderr
        assert server.sync_calls == 0
        batches = list(server.batches.values())
    answers = [a for _, a in jsonl.read(out / "answers.jsonl")]
    verdicts = [v for _, v in jsonl.read(out / "judgments.jsonl")]
    assert [len(b.requests) for b in batches] == [3, 3, 3]  # the answers, the first calls, the verdicts
    firsts = batches[1].requests
    assert all(b["body"]["messages"][0]["content"] == FIRST_SYSTEM and "response_format" not in b["body"]
               for b in firsts)
    assert not any(a["text"] in json.dumps(b["body"], ensure_ascii=False) for a in answers for b in firsts
                   if len(a["text"]) > 20)
    assert {v["judge_answer"]["call"] for v in verdicts} == {b["custom_id"] for b in firsts}
    assert {v["calls"][0] for v in verdicts} == {b["custom_id"] for b in batches[2].requests}
    v = cli("judge", "verify", str(out), env=env, timeout=300)
    assert v.returncode == 0, v.stdout + v.stderr


@pytest.mark.unit
def test_a_bundle_withholds_the_judges_answer_text_and_keeps_its_call_and_tokens():
    """The judge's answer is text about the question (a private set's question would show through it): withheld like
    a rationale. Its call key and tokens stay public, so the bundle's cost is the folder's."""
    own = {"form": "two_calls", "text": "Mine: 180 alder crowns.", "call": "ab" * 32, "cached": True,
           "prompt_tokens": 40, "completion_tokens": 9}
    salts = Salts(b"k" * 32)
    out = redact_judgment({"judge": "j", "label": "L1", "judge_answer": own}, salts, "judgments.jsonl:3")
    shown = out["judge_answer"]
    assert {k: v for k, v in shown.items() if k != "text"} == {k: v for k, v in own.items() if k != "text"}
    assert set(shown["text"]) == {"withheld"} and re.fullmatch(r"[0-9a-f]{64}", shown["text"]["withheld"])
    assert own["text"] not in json.dumps(out)


EDITS = {"text": st.text(min_size=1, max_size=20).map(lambda t: "Mine: 180 alder crowns." + t),
         "call": st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
         "prompt_tokens": st.integers(0, 10**6).filter(lambda n: n != 40),
         "completion_tokens": st.integers(0, 10**6).filter(lambda n: n != 9),
         "form": st.sampled_from(["one_reply", "two", ""]),
         "missing": st.sampled_from(["form", "text", "call", "cached", "prompt_tokens", "completion_tokens"])}


@pytest.fixture(scope="module")
def recorded_first_call(tmp_path_factory):
    """A two_calls rubric, a judge identity, and a call cache holding the judge's own answer to ITEM's question
    under the key of its first call: what a run leaves for verify."""
    folder = tmp_path_factory.mktemp("af")
    rubric = load_rubric("two", answer_first_rubric(folder / "rubrics", "two", 'answer_first = "two_calls"'))
    identity = {"backend": "openai", "model": "judge"}
    key = call_key(identity, first_request(rubric, ITEM.question, ITEM.reference))
    cache = CallCache(folder / "calls.sqlite")
    cache.put(key, Reply("Mine: 180 alder crowns.", "stop", 40, 9, 0.1), identity)
    cache.close()
    own = {"form": "two_calls", "text": "Mine: 180 alder crowns.", "call": key, "cached": False, "prompt_tokens": 40,
           "completion_tokens": 9}
    return rubric, identity, folder / "calls.sqlite", own


@pytest.mark.unit
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edit=st.sampled_from(sorted(EDITS)).flatmap(lambda k: st.tuples(st.just(k), EDITS[k])))
def test_any_edit_of_a_recorded_judge_answer_is_a_finding_naming_its_field(recorded_first_call, edit):
    rubric, identity, cache, own = recorded_first_call
    replies = Replies([cache])
    try:
        row = {"status": "scored", "judge_answer": own}
        assert check(row, rubric, ITEM.question, ITEM.reference, identity, replies, "j:1", None) == (own["text"], [])
        field, value = edit
        edited = {k: v for k, v in own.items() if k != value} if field == "missing" else {**own, field: value}
        _, found = check({**row, "judge_answer": edited}, rubric, ITEM.question, ITEM.reference, identity, replies,
                         "j:1", None)
    finally:
        replies.close()
    assert found and all(f.startswith("judge_answer") for f, _ in found)
    if field in ("text", "call", "prompt_tokens", "completion_tokens"):
        assert f"judge_answer.{field}" in [f for f, _ in found]
    other = load_rubric("correctness")  # a rubric that asks for no answer: any recorded one is a finding
    assert check(row, other, ITEM.question, ITEM.reference, identity, Replies([]), "j:1", None)[1]
