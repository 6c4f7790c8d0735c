"""Re-running retries exactly the answers and verdicts whose call failed (`error`), against a real HTTP server.

Run 1 meets a failing server: an `error` answer from a plain arm, an `error` answer from a glue arm whose
first call succeeded and second failed, and an `error` verdict. Run 2 meets a healthy server: exactly those
are asked again (the glue's finished first call comes from the cache), each retry is appended with
`retry_of` = the line of the error record it replaces, the report counts the final state (0 errors) and
`judge verify` passes. Run 3 makes no call. A hand-edited raw file that breaks the retry rule fails verify
(and `judge run`) naming the file, line and field; the main path and verify's own reader agree on the rule.
"""
from __future__ import annotations

import json
import shutil

import pytest
from test_faults import _report_cells

from core import jsonl
from core.errors import BadInput
from judge.results.files import last_invocation
from judge.verify.second_path.raw_files import by_hand
from registration.seal import seal

from conftest import ROOT, cli, http_prereg
from support.scripted_server import ScriptedServer, Seen, Step, fail, reply, verdict

QUESTIONS = {json.loads(line)["question"]: json.loads(line)["id"]
             for line in (ROOT / "sealed" / "demo" / "sets" / "exam.jsonl").read_text().splitlines()[:3]}
GOOD = {"rationale": "Agrees with the reference.", "score": 2, "harmful": False}
ENV = {"OPENAI_API_KEY": "sk-test"}

GLUE = '''
from arms.glue import GlueResult


def answer(question, call_model, experiment_dir):
    """Two model calls per answer: a draft, then a final answer built on it."""
    draft = call_model([("user", "DRAFT " + question.question)])
    final = call_model([("user", "FINAL " + question.question + " " + draft.text)])
    return GlueResult(final.text, {"draft": draft.text})
'''


def _prereg(url: str) -> str:
    return http_prereg("retry", f"{url}/v1", f"""[models.arm]
backend = "openai"
source = "arm-model"
base_url = "{url}/v1"
family = "scripted"
timeout_s = 5
attempts = 2

[[arms]]
name = "plain"
model = "arm"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 64, seed = 0, system = "PLAIN" }}

[[arms]]
name = "glue"
model = "arm"
glue = "twocall:answer"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 64, seed = 0 }}
""", [("H-glue", "plain", "glue")], judge_settings="timeout_s = 5\nattempts = 2\n")


def _qid(prompt: str) -> str:
    (qid,) = [qid for text, qid in QUESTIONS.items() if text in prompt]
    return qid


def call_name(seen: Seen) -> str:
    """What a call was for: ("plain", q), ("draft", q), ("final", q) or ("judge", the answer judged)."""
    if seen.model == "judge-model":
        return "judge " + next(w for w in ("plain q01", "plain q02", "plain q03", "glue q01", "glue q02", "glue q03")
                               if f"{w} answer" in seen.prompt)
    kind = "draft" if "DRAFT " in seen.prompt else "final" if "FINAL " in seen.prompt else "plain"
    return f"{kind} {_qid(seen.prompt)}"


class Script:
    """Phase 1: plain q02 fails, glue q01's second call fails, the verdict on plain q03 fails (500s every
    attempt); phase 2: every call answers."""

    FAILING = {"plain q02", "final q01", "judge plain q03"}

    def __init__(self):
        self.phase = 1

    def __call__(self, seen: Seen) -> Step:
        name = call_name(seen)
        if self.phase == 1 and name in self.FAILING:
            return fail(500, retry_after=0)
        if seen.model == "judge-model":
            return verdict(GOOD)
        kind, qid = name.split()
        return reply("a draft." if kind == "draft" else f"{'glue' if kind == 'final' else 'plain'} {qid} answer.")


def _records(path):
    return list(jsonl.read(path))


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """A sealed copy of the demo registering two HTTP arms (plain, two-call glue) and an HTTP judge, all served
    by one scripted server; yields (exp, server, script, env)."""
    root = tmp_path_factory.mktemp("retry")
    exp = root / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    (root / "twocall.py").write_text(GLUE)
    script = Script()
    with ScriptedServer(script, models=("arm-model", "judge-model")) as server:
        (exp / "prereg.toml").write_text(_prereg(server.url))
        seal(exp)
        yield exp, server, script, {**ENV, "PYTHONPATH": str(root), "BLINDEVAL_CACHE": str(root / "cache")}


@pytest.fixture(scope="module")
def retried(experiment, tmp_path_factory):
    """Run 1 against the failing server, run 2 against the healthy one; what each left and which calls it made."""
    exp, server, script, env = experiment
    out = tmp_path_factory.mktemp("out") / "run"
    args = ("judge", "run", "--exp", str(exp), "--arms", "--limit", "3", "--out", str(out), "--quiet")
    script.phase = 1
    r1 = cli(*args, env=env, timeout=180)
    assert r1.returncode == 1 and "check failed: H-glue decided nothing" in r1.stderr, r1.stderr  # 2 of 3 missing
    seen1 = len(server.seen)
    run1 = {name: _records(out / name) for name in ("answers.jsonl", "judgments.jsonl")}
    numbers1 = json.loads((out / "numbers.json").read_text())
    script.phase = 2
    r2 = cli(*args, env=env, timeout=180)
    assert r2.returncode == 0, r2.stderr
    return {"out": out, "args": args, "run1": run1, "numbers1": numbers1,
            "calls1": [call_name(s) for s in server.seen[:seen1]],
            "calls2": [call_name(s) for s in server.seen[seen1:]], "seen2": len(server.seen)}


@pytest.mark.integration
def test_run_one_records_the_failures_as_error_rows(retried):
    answers, judgments = retried["run1"]["answers.jsonl"], retried["run1"]["judgments.jsonl"]
    errors = sorted(f"{r['arm']} {r['question_id']}" for _, r in answers if r["status"] == "error")
    assert errors == ["glue q01", "plain q02"] and len(answers) == 6
    assert [r["status"] for _, r in judgments].count("error") == 1 and len(judgments) == 4
    # each failing call was tried the registered 2 times; glue q01's draft succeeded before its final call failed
    calls = retried["calls1"]
    assert calls.count("plain q02") == calls.count("final q01") == calls.count("judge plain q03") == 2
    assert calls.count("draft q01") == 1
    cells = {c["arm"]: c for c in retried["numbers1"]["cells"]}
    assert (cells["plain"]["answer_errors"], cells["plain"]["judge_errors"],
            cells["glue"]["answer_errors"]) == (1, 1, 1)


@pytest.mark.integration
def test_run_two_asks_exactly_the_error_rows_again_and_appends_retries(retried):
    out, run1 = retried["out"], retried["run1"]
    # exactly the failed calls, once each: glue q01's finished draft came from the call cache; plus the two
    # verdicts on the answers that now exist, and the retried verdict
    assert sorted(retried["calls2"]) == ["final q01", "judge glue q01", "judge plain q02", "judge plain q03",
                                         "plain q02"]
    for name, key in (("answers.jsonl", ("row",)), ("judgments.jsonl", ("judge", "label"))):
        before, after = run1[name], _records(out / name)
        assert after[:len(before)] == before  # append-only: nothing earlier was touched
        errors = {tuple(r[f] for f in key): line for line, r in before if r["status"] == "error"}
        retries = {tuple(r[f] for f in key): r["retry_of"] for _, r in after[len(before):] if "retry_of" in r}
        assert retries == errors, name  # each error record is replaced once, pointing at its line
        assert all(r["status"] in ("ok", "scored") for _, r in after[len(before):])
    glue = next(r for _, r in _records(out / "answers.jsonl")[6:] if r["arm"] == "glue")
    assert glue["question_id"] == "q01" and glue["cached_calls"] == 1 and len(glue["calls"]) == 2
    run = last_invocation(out)
    assert (run["answers"]["rows_retried"], run["answers"]["model_calls"], run["answers"]["cached_calls"]) == (2, 2, 1)
    assert run["judging"]["openai/correctness"]["retried"] == 1


@pytest.mark.integration
def test_report_counts_the_final_state_and_verify_passes(experiment, retried):
    out = retried["out"]
    numbers = json.loads((out / "numbers.json").read_text())
    cells = {c["arm"]: c for c in numbers["cells"]}
    for arm in ("plain", "glue"):
        c = cells[arm]
        assert (c["answers"], c["answer_errors"], c["answer_retries"], c["judge_errors"],
                c["scored"]) == (3, 0, 1, 0, 3)
    assert numbers["judge_totals"]["openai/correctness"] == {"scored": 6, "unscored": 0, "error": 0, "repaired": 0}
    report = _report_cells((out / "report.md").read_text())
    assert all(report[arm]["answer errors"] == "0" and report[arm]["judge errors"] == "0"
               and report[arm]["answers retried"] == "1" for arm in ("plain", "glue"))
    v = cli("judge", "verify", str(out), env=experiment[3], timeout=120)  # the run's cache and glue
    assert v.returncode == 0, v.stderr


@pytest.mark.integration
def test_run_three_makes_no_call(experiment, retried):
    _, server, _, env = experiment
    out = retried["out"]
    raw = {name: (out / name).read_bytes() for name in ("answers.jsonl", "judgments.jsonl", "blinding.jsonl")}
    r = cli(*retried["args"], env=env, timeout=180)
    assert r.returncode == 0, r.stderr
    assert len(server.seen) == retried["seen2"]
    assert raw == {name: (out / name).read_bytes() for name in raw}
    run = last_invocation(out)
    assert run["answers"]["rows_retried"] == 0 and run["judging"]["openai/correctness"]["retried"] == 0


def _tamper(out, name: str, edit) -> int:
    """Apply `edit` to the list of raw lines of one file; return the line number it names."""
    lines = (out / name).read_text().splitlines()
    line = edit(lines)
    (out / name).write_text("\n".join(lines) + "\n")
    return line


def _first_ok(lines) -> int:
    return next(i for i, line in enumerate(lines) if json.loads(line)["status"] == "ok")


def _duplicate_ok(lines):  # a second ok row for a row that already has one
    lines.append(lines[_first_ok(lines)])
    return len(lines)


def _ok_superseded(lines):  # a "retry" of a row whose record is ok, not an error
    n = _first_ok(lines)
    lines.append(jsonl.dumps({**json.loads(lines[n]), "retry_of": n + 1}))
    return len(lines)


def _retry_points_elsewhere(lines):  # a real retry, its retry_of moved to the next line
    n = next(i for i, line in enumerate(lines) if "retry_of" in json.loads(line))
    rec = json.loads(lines[n])
    lines[n] = jsonl.dumps({**rec, "retry_of": rec["retry_of"] + 1})
    return n + 1


@pytest.mark.integration
@pytest.mark.parametrize("edit, field", [(_duplicate_ok, "row"), (_ok_superseded, "row"),
                                         (_retry_points_elsewhere, "retry_of")])
def test_verify_names_a_record_that_breaks_the_retry_rule(experiment, retried, tmp_path, edit, field):
    _, server, _, env = experiment
    out = tmp_path / "tampered"
    shutil.copytree(retried["out"], out)
    line = _tamper(out, "answers.jsonl", edit)
    v = cli("judge", "verify", str(out), env=env, timeout=120)
    assert v.returncode == 1, v.stderr
    where = f"{out / 'answers.jsonl'}:{line}: field '{field}'"
    assert f"  - {where}" in v.stderr, v.stderr  # verify's own reading of the rule names it ...
    assert f"the main path refuses the raw files: {where}" in v.stderr, v.stderr  # ... and so does the main path
    assert "Traceback" not in v.stderr, v.stderr
    # the run itself refuses the file too, naming the same line, before any call
    calls = len(server.seen)
    r = cli(*retried["args"][:-3], "--out", str(out), "--quiet", env=env, timeout=180)
    assert r.returncode == 2 and f"answers.jsonl:{line}: field '{field}'" in r.stderr, r.stderr
    assert len(server.seen) == calls


@pytest.mark.integration
def test_arms_collect_retries_error_rows(experiment, tmp_path):
    exp, server, script, env = experiment
    env = {**env, "BLINDEVAL_CACHE": str(tmp_path / "cache")}  # none of the judge runs' calls is cached here
    out = tmp_path / "collected"
    args = ("arms", "collect", "--exp", str(exp), "--arms", "plain", "--limit", "3", "--out", str(out), "--quiet")
    script.phase, start = 1, len(server.seen)
    try:
        assert cli(*args, env=env, timeout=120).returncode == 0
        first = _records(out / "answers.jsonl")
        (error_line,) = [line for line, r in first if r["status"] == "error"]
        middle = len(server.seen)
        script.phase = 2
        r = cli(*args, env=env, timeout=120)
    finally:
        script.phase = 2
    assert r.returncode == 0, r.stderr
    assert [call_name(s) for s in server.seen[middle:]] == ["plain q02"] and middle - start == 4
    after = _records(out / "answers.jsonl")
    assert after[:3] == first and len(after) == 4
    assert after[3][1]["retry_of"] == error_line and after[3][1]["status"] == "ok"
    last = json.loads((out / "collection.json").read_text())["last_invocation"]["answers"]
    assert (last["rows_retried"], last["rows_already_done"], last["errors"]) == (1, 2, 0)


# --- the rule itself: the main path's reader and verify's own reader agree on every file ----------------

RULE_CASES = [  # (records as (status, retry_of), the breach's line and field, or None)
    pytest.param([("error", None), ("error", 1), ("ok", 2)], None, id="retried-twice"),
    pytest.param([("ok", None), ("ok", None)], (2, "row"), id="two-ok"),
    pytest.param([("ok", None), ("ok", 1)], (2, "row"), id="ok-superseded"),
    pytest.param([("error", None), ("ok", None)], (2, "retry_of"), id="retry-without-retry_of"),
    pytest.param([("error", None), ("error", 1), ("ok", 1)], (3, "retry_of"), id="retry_of-not-the-previous"),
    pytest.param([("ok", 1)], (1, "retry_of"), id="retry_of-on-a-first-record"),
]


@pytest.mark.unit
@pytest.mark.parametrize("records, breach", RULE_CASES)
def test_main_reader_and_verify_reader_agree_on_the_rule(tmp_path, records, breach):
    path = tmp_path / "answers.jsonl"
    with jsonl.Appender(path) as w:
        w.write({"row": "other", "status": "error"})  # another key, never retried: current, not a breach
        for status, retry_of in records:
            w.write({"row": "r1", "status": status}, retry_of=None if retry_of is None else retry_of + 1)
    ind = by_hand(path, ("row",))
    if breach is None:
        cur = jsonl.current(path, ("row",))
        assert cur[("r1",)].record["status"] == "ok" and cur[("r1",)].superseded == len(records) - 1
        assert cur[("r1",)].line == len(records) + 1 and ind.records[("r1",)] == len(records) and ind.problems == []
        assert ind.last[("r1",)] == cur[("r1",)].record
        assert jsonl.to_retry(cur) == {("other",): 1}
        return
    line, field = breach
    with pytest.raises(BadInput) as e:
        jsonl.current(path, ("row",))
    assert (e.value.line, e.value.field) == (line + 1, field)
    assert any(p.startswith(f"{path}:{line + 1}: field '{field}'") for p in ind.problems), ind.problems
