"""One results folder holds exactly one registered experiment: bound at its start, locked while written.

Most runs here are real `python -m judge run` calls against a scripted HTTP server on 127.0.0.1 standing in for
the arms' and the judge's servers (fast, and deterministic: an answer depends only on the model and the
question, a verdict only on the prompt), so a folder extended in two runs can be compared with a fresh one,
and a run can be slowed down to be killed or to hold its lock. A run with nothing scripted uses llama-server.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from core import jsonl
from core.records import RunInfo
from judge.gold.sources import run_gold
from judge.numbers.analysis import amendments as amendment_rows
from judge.numbers.analysis import compute_numbers, write_numbers
from judge.outputs.report import folder_report
from judge.outputs.review_md import write_review
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.seal import amend, seal

from conftest import ROOT, cli
from support.scripted_server import ScriptedServer, Seen, Step, reply, verdict

ENV = {"OPENAI_API_KEY": "sentinel-not-a-real-key"}
SERVED = ("model-a", "model-b", "judge-model", "judge-model-2")


class Script:
    """Answers by model and question; verdicts by a hash of the prompt. `slow` delays answers after the first
    `fast` answer calls (to kill a run, or hold its lock, mid-collection)."""

    def __init__(self) -> None:
        self.answer_calls = 0
        self.fast: int | None = None
        self.slow = 0.0

    def __call__(self, seen: Seen) -> Step:
        h = int(hashlib.sha256(seen.prompt.encode()).hexdigest(), 16)
        if seen.model.startswith("judge-model"):
            if "comparing two candidate answers" in seen.prompt:
                return verdict({"rationale": "ok", "preferred": h % 3})
            return verdict({"rationale": "ok", "score": h % 3, "harmful": False})
        self.answer_calls += 1
        delay = self.slow if self.fast is not None and self.answer_calls > self.fast else 0.0
        return reply(f"{seen.model} says {h % 1000} alder crowns.", delay_s=delay)


def prereg(url: str, *, sets: str = '"sets/exam.jsonl"', base: str = "max_tokens = 64, seed = 0",
           glue: str = "", quants: str = '["served"]', extra: str = "") -> str:
    return f"""[experiment]
name = "folder"
seed = 11
sets = [{sets}]

[models.a]
backend = "openai"
source = "model-a"
base_url = "{url}"
family = "scripted"
concurrency = 1

[models.b]
backend = "openai"
source = "model-b"
base_url = "{url}"
family = "scripted"
concurrency = 1

[models.gpt]
backend = "openai"
source = "judge-model"
base_url = "{url}"
family = "gpt"

[models.gpt2]
backend = "openai"
source = "judge-model-2"
base_url = "{url}"
family = "scripted"

[[arms]]
name = "base"
model = "a"
quants = {quants}
generation = {{ temperature = 0.0, {base} }}

[[arms]]
name = "trained"
model = "b"
quants = ["served"]
{glue}generation = {{ temperature = 0.0, max_tokens = 64, seed = 0 }}

[judge]
rubric = "correctness"
verdict_attempts = 2

[judges.openai]
model = "gpt"
requires_env = "OPENAI_API_KEY"

[judges.second]
model = "gpt2"
requires_env = "OPENAI_API_KEY"

[analysis]
resamples = 2000
method = "percentile"
seed = 11
max_unscored = 0.10

[[hypotheses]]
id = "H1"
a = "base"
b = "trained"
quant = "served"
kind = "non_inferiority"
margin = 0.10
alpha = 0.025
{extra}"""


@pytest.fixture
def server():
    script = Script()
    with ScriptedServer(script, models=SERVED) as s:
        yield s


def experiment(root: Path, url: str, **kw) -> Path:
    exp = root / "exp"
    if not exp.exists():
        shutil.copytree(ROOT / "sealed" / "demo", exp)
    (exp / "prereg.toml").write_text(prereg(url, **kw))
    seal(exp)
    return exp


def run(exp: Path, out: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return cli("judge", "run", "--exp", str(exp), "--out", str(out), "--quiet", *args, env={**ENV, **(env or {})},
               timeout=180)


def lines(path: Path) -> list[dict]:
    return [r for _, r in jsonl.read(path)]


def cells(out: Path) -> dict:
    """What a reader of the folder sees: per cell the numbers, and each decision."""
    n = json.loads((out / "numbers.json").read_text())
    return {"cells": n["cells"], "comparisons": n["comparisons"], "judges": n["judges"]}


# --- 1. a run extended with more questions or arms counts each answer once ---------------------------------

@pytest.mark.integration
def test_extended_run_labels_each_answer_once_and_decides_as_a_fresh_run(server, tmp_path):
    exp = experiment(tmp_path, server.openai_url)
    extended, fresh = tmp_path / "extended", tmp_path / "fresh"
    labelled: dict[str, str] = {}  # row -> label, as each run left them
    for args in (("--arms", "base", "--limit", "2"), ("--arms", "base,trained", "--limit", "2"),
                 ("--arms", "base,trained", "--limit", "3")):
        r = run(exp, extended, *args)
        assert r.returncode == 0, r.stderr
        now = {k["row"]: k["label"] for k in lines(extended / "blinding.jsonl")}
        assert {row: now[row] for row in labelled} == labelled  # an extension keeps every label it found
        labelled = now
    r = run(exp, fresh, "--arms", "base,trained", "--limit", "3")
    assert r.returncode == 0, r.stderr

    answers = lines(extended / "answers.jsonl")
    assert Counter(a["arm"] for a in answers) == {"base": 3, "trained": 3}
    keys = lines(extended / "blinding.jsonl")
    assert len(keys) == 6 and len({k["row"] for k in keys}) == 6  # one key per answer, never a second label
    arm_of = {k["label"]: k["arm"] for k in keys}
    verdicts = lines(extended / "judgments.jsonl")
    assert Counter((v["judge"], arm_of[v["label"]]) for v in verdicts) == {("openai", "base"): 3,
                                                                          ("openai", "trained"): 3}
    # the same answers as a fresh run of the whole scope, under labels of its own secret, and the same numbers and
    # decision
    fresh_keys = lines(fresh / "blinding.jsonl")
    assert {k["row"] for k in keys} == {k["row"] for k in fresh_keys}
    assert not {k["label"] for k in keys} & {k["label"] for k in fresh_keys}
    assert cells(extended) == cells(fresh)
    binding = json.loads((extended / "binding.json").read_text())
    assert [(h["arms"], h["limit"]) for h in binding["history"]] == [
        (["base"], 2), (["base", "trained"], 2), (["base", "trained"], 3)]
    assert cli("judge", "verify", str(extended)).returncode == 0


@pytest.mark.integration
def test_a_narrower_run_into_an_extended_folder_is_refused(server, tmp_path):
    exp = experiment(tmp_path, server.openai_url)
    out = tmp_path / "out"
    assert run(exp, out, "--arms", "base,trained", "--limit", "3").returncode == 0
    before = (out / "answers.jsonl").read_bytes()
    r = run(exp, out, "--arms", "base,trained", "--limit", "2")
    assert r.returncode == 2 and "--limit: bound 3, now 2" in r.stderr, r.stderr
    r = run(exp, out, "--arms", "base", "--limit", "3")
    assert r.returncode == 2 and "this run leaves out trained" in r.stderr, r.stderr
    assert (out / "answers.jsonl").read_bytes() == before


# --- 2. a folder whose first run was killed is bound to its registration -------------------------------------

@pytest.mark.integration
def test_killed_run_then_changed_settings_are_refused_not_mixed(server, tmp_path):
    exp = experiment(tmp_path, server.openai_url)
    out = tmp_path / "out"
    state = server.script
    state.fast, state.slow = 2, 3.0  # two answers come at once, the third takes 3 s: the kill lands there
    proc = subprocess.Popen([sys.executable, "-m", "judge", "run", "--exp", str(exp), "--arms", "--limit", "3",
                             "--out", str(out), "--quiet"], cwd=ROOT, env={**os.environ, **ENV},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while len(lines(out / "answers.jsonl")) < 2 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    state.fast = None
    assert len(lines(out / "answers.jsonl")) == 2 and not (out / "run.json").exists()

    exp = experiment(tmp_path, server.openai_url, base='max_tokens = 48, seed = 0, system = "Be brief."')
    r = run(exp, out, "--arms", "--limit", "3")
    assert r.returncode == 2, r.stderr
    assert "bound to another registration" in r.stderr
    assert "arm 'base' generation.max_tokens: bound 64, now 48" in r.stderr
    assert "arm 'base' generation.system: bound null, now \"Be brief.\"" in r.stderr
    assert "prereg.toml sha256: bound" in r.stderr
    assert len(lines(out / "answers.jsonl")) == 2  # nothing written under the new settings


@pytest.mark.integration
def test_folder_written_before_binding_is_not_resumed(server, tmp_path):
    exp = experiment(tmp_path, server.openai_url)
    out = tmp_path / "out"
    assert run(exp, out, "--arms", "--limit", "2").returncode == 0
    (out / "binding.json").unlink()  # as a folder written by an older version has none
    r = run(exp, out, "--arms", "--limit", "2")
    assert r.returncode == 2 and "no binding.json" in r.stderr, r.stderr


@pytest.mark.integration
def test_collection_never_skips_a_row_answered_under_other_settings(server, tmp_path):
    """`arms collect` is bound like `judge run`; under the binding, it still skips a row by its id only if the
    row's settings are the registered ones (a binding.json edited by hand does not get a row reused)."""
    exp = experiment(tmp_path, server.openai_url)
    out = tmp_path / "out"
    args = ("arms", "collect", "--exp", str(exp), "--arms", "base", "--limit", "2", "--out", str(out), "--quiet")
    assert cli(*args, env=ENV, timeout=120).returncode == 0
    exp = experiment(tmp_path, server.openai_url, base="max_tokens = 48, seed = 0")
    r = cli(*args, env=ENV, timeout=120)
    assert r.returncode == 2 and "arm 'base' generation.max_tokens: bound 64, now 48" in r.stderr, r.stderr
    binding = json.loads((out / "binding.json").read_text())
    from arms.folder import registration

    binding["registration"] = registration(load_experiment(exp), ["base"])
    (out / "binding.json").write_text(json.dumps(binding))
    r = cli(*args, env=ENV, timeout=120)
    assert r.returncode == 2 and f"{out / 'answers.jsonl'}:" in r.stderr and "field 'settings'" in r.stderr
    assert "max_tokens 64 (registered now: 48)" in r.stderr, r.stderr
    assert len(lines(out / "answers.jsonl")) == 2


# --- 3. one run at a time ------------------------------------------------------------------------------------

@pytest.mark.integration
def test_second_concurrent_run_is_refused_at_once_naming_the_holder(server, tmp_path):
    """A second `judge run`, and an `arms collect`, while a run writes the folder (a collect holding it:
    tests/test_collect_lock.py)."""
    exp = experiment(tmp_path, server.openai_url)
    out = tmp_path / "out"
    state = server.script
    state.fast, state.slow = 1, 3.0  # the first run holds the folder for several seconds
    first = subprocess.Popen([sys.executable, "-m", "judge", "run", "--exp", str(exp), "--arms", "--limit", "3",
                              "--out", str(out), "--quiet"], cwd=ROOT, env={**os.environ, **ENV},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not lines(out / "answers.jsonl") and first.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        t0 = time.monotonic()
        r = run(exp, out, "--arms", "--limit", "3")
        took = time.monotonic() - t0
        assert r.returncode == 2, r.stderr
        c = cli("arms", "collect", "--exp", str(exp), "--arms", "base,trained", "--limit", "3", "--out", str(out),
                "--quiet", env=ENV, timeout=120)
        assert first.poll() is None, "the first run finished before the others were refused: the test proves nothing"
        state.slow = 0.0  # let it finish
    finally:
        _, err = first.communicate(timeout=180)
    for refused in (r, c):
        assert refused.returncode == 2, refused.stderr
        assert f"another `judge run` is writing this results folder (pid {first.pid} on host" in refused.stderr
    assert took < 30
    assert first.returncode == 0, err
    assert state.answer_calls == 6  # each answer paid for once
    assert cli("judge", "verify", str(out)).returncode == 0


# --- 4. the seal covers every file a run reads ---------------------------------------------------------------

@pytest.mark.integration
def test_a_set_outside_the_experiment_folder_is_refused(server, tmp_path):
    shutil.copy(ROOT / "sealed" / "demo" / "sets" / "exam.jsonl", tmp_path / "outside.jsonl")
    exp = experiment(tmp_path, server.openai_url, sets='"../outside.jsonl"')
    r = run(exp, tmp_path / "out", "--arms", "--limit", "2")
    assert r.returncode == 2 and "field 'sets'" in r.stderr and "outside the experiment folder" in r.stderr, r.stderr
    assert server.count == 0


@pytest.mark.integration
def test_a_symlinked_sets_folder_is_refused(server, tmp_path):
    exp = experiment(tmp_path, server.openai_url)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(exp / "sets", elsewhere)
    (exp / "sets").symlink_to(elsewhere, target_is_directory=True)
    r = cli("judge", "seal", str(exp))
    assert r.returncode == 2 and f"{exp / 'sets'}: is a symbolic link" in r.stderr, r.stderr
    # a folder sealed before the link appeared: the run refuses it too, before any call
    edited = (elsewhere / "exam.jsonl").read_text().replace("How much", "How little", 1)
    (elsewhere / "exam.jsonl").write_text(edited)
    r = run(exp, tmp_path / "out", "--arms", "--limit", "2")
    assert r.returncode == 2 and "is a symbolic link" in r.stderr, r.stderr
    assert server.count == 0


GLUE = '''from arms.glue import GlueResult

SUFFIX = "{suffix}"


def answer(question, call_model, experiment_dir):
    return GlueResult(call_model([("user", question.question)]).text + SUFFIX)
'''


@pytest.mark.integration
def test_edited_glue_source_is_refused_in_the_same_folder(server, tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    (code / "myglue.py").write_text(GLUE.format(suffix=" (v1)"))
    env = {"PYTHONPATH": f"{code}{os.pathsep}{ROOT}"}
    exp = experiment(tmp_path, server.openai_url, glue='glue = "myglue:answer"\n')
    out = tmp_path / "out"
    assert run(exp, out, "--arms", "--limit", "2", env=env).returncode == 0
    (code / "myglue.py").write_text(GLUE.format(suffix=" (v2)"))
    r = run(exp, out, "--arms", "--limit", "3", env=env)
    assert r.returncode == 2 and "glue myglue:answer source sha256: bound" in r.stderr, r.stderr
    assert not any("(v2)" in (a["text"] or "") for a in lines(out / "answers.jsonl"))
    binding = json.loads((out / "binding.json").read_text())
    assert binding["registration"]["glue myglue:answer source sha256"] == hashlib.sha256(
        GLUE.format(suffix=" (v1)").encode()).hexdigest()



@pytest.mark.integration
def test_a_glue_file_in_the_experiment_folder_is_sealed_and_bound(server, tmp_path):
    """"file.py:function" loads the file from the experiment folder (no PYTHONPATH): the seal covers it, an edit
    after sealing is refused, and binding.json holds its sha256 as for a module; a file outside is refused."""
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    (exp / "myglue.py").write_text(GLUE.format(suffix=" (v1)"))
    experiment(tmp_path, server.openai_url, glue='glue = "myglue.py:answer"\n')
    assert "myglue.py" in (exp / "MANIFEST").read_text()
    out = tmp_path / "out"
    assert run(exp, out, "--arms", "--limit", "2").returncode == 0
    texts = [a["text"] for a in lines(out / "answers.jsonl")]
    assert sum(t.endswith(" (v1)") for t in texts) == 2, texts  # the glue arm's two answers
    binding = json.loads((out / "binding.json").read_text())
    assert binding["registration"]["glue myglue.py:answer source sha256"] == hashlib.sha256(
        GLUE.format(suffix=" (v1)").encode()).hexdigest()
    (exp / "myglue.py").write_text(GLUE.format(suffix=" (v2)"))
    r = run(exp, out, "--arms", "--limit", "3")
    assert r.returncode == 2 and "myglue.py" in r.stderr and "changed after sealing" in r.stderr, r.stderr
    seal(exp)
    r = run(exp, out, "--arms", "--limit", "3")
    assert r.returncode == 2 and "glue myglue.py:answer source sha256: bound" in r.stderr, r.stderr
    (tmp_path / "outside.py").write_text(GLUE.format(suffix=""))
    experiment(tmp_path, server.openai_url, glue='glue = "../outside.py:answer"\n')
    r = run(exp, tmp_path / "out2", "--arms", "--limit", "2")
    assert r.returncode == 2 and "outside the experiment folder" in r.stderr and "'glue'" in r.stderr, r.stderr
    assert not (tmp_path / "out2" / "answers.jsonl").exists()

@pytest.mark.integration
def test_edited_pairwise_rubric_is_refused_in_the_same_folder(server, tmp_path):
    """The pairwise rubric is not the primary one; it shapes verdicts all the same."""
    code = tmp_path / "code"
    for part in ("core", "models", "registration", "arms", "judge", "audit", "pipeline", "rubrics"):
        shutil.copytree(ROOT / part, code / part, ignore=shutil.ignore_patterns("__pycache__"))
    exp = experiment(tmp_path, server.openai_url)
    out = tmp_path / "out"

    def run_copy(*args):
        return subprocess.run([sys.executable, "-m", "judge", "run", "--exp", str(exp), "--out", str(out), "--quiet",
                               *args], cwd=code, env={**os.environ, **ENV, "PYTHONPATH": str(code)},
                              capture_output=True, text=True, timeout=180, check=False)

    r = run_copy("--arms", "--limit", "2", "--mode", "both")
    assert r.returncode == 0, r.stderr
    template = code / "rubrics" / "pairwise.j2"
    template.write_text(template.read_text() + "\nPrefer the longer answer.\n")
    r = run_copy("--arms", "--limit", "2", "--mode", "both")
    assert r.returncode == 2 and "rubric pairwise (pairwise; TOML and template) sha256: bound" in r.stderr, r.stderr


# --- 5. an HTTP arm has one quant label -----------------------------------------------------------------------

@pytest.mark.integration
def test_http_arm_with_two_quant_labels_is_refused(server, tmp_path):
    exp = experiment(tmp_path, server.openai_url, quants='["Q4_K_M", "Q8_0"]')
    r = run(exp, tmp_path / "out", "--arms", "--limit", "2")
    assert r.returncode == 2, r.stderr
    assert "field 'quants'" in r.stderr and "arm 'base' runs on openai model 'a'" in r.stderr
    assert server.count == 0


# --- 6. amendments: bound at the start of judging, and dated as times ----------------------------------------

def reanalyse(exp: Path, out: Path) -> None:
    """Recompute numbers.json and report.md from the raw files, as a careful forger would."""
    info = json.loads((out / "run.json").read_text())
    e = load_experiment(exp)
    numbers = compute_numbers(e, load_questions(e.set_paths()), out, RunInfo.from_dict(info, "run.json"),
                              run_gold(e, out))
    write_numbers(numbers, out / "numbers.json")
    write_review(out, exp)
    (out / "report.md").write_text(folder_report(out))


@pytest.mark.integration
def test_amendment_written_after_judging_and_redated_earlier_is_refused_and_flagged(server, tmp_path):
    exp = experiment(tmp_path, server.openai_url)
    out = tmp_path / "out"
    assert run(exp, out, "--arms", "--limit", "2").returncode == 0
    first = min(dt.datetime.fromisoformat(v["time"]) for v in lines(out / "judgments.jsonl"))
    amend(exp, "tighten the margin after seeing scores", now=first - dt.timedelta(hours=1))  # re-dated earlier
    r = run(exp, out, "--arms", "--limit", "2")
    assert r.returncode == 2, r.stderr
    assert f"{exp / 'amendments.jsonl'}:1: field 'date': amendment 1" in r.stderr
    assert "added to the chain after judging began in this results folder" in r.stderr
    reanalyse(exp, out)  # numbers.json and report.md agree with the files: only the binding is left to catch it
    v = cli("judge", "verify", str(out))
    assert v.returncode == 1, v.stderr
    assert f"amendments: {exp / 'amendments.jsonl'}:1: field 'date': amendment 1" in v.stderr


@pytest.mark.integration
def test_amendment_edited_and_rechained_after_judging_is_refused_and_flagged(server, tmp_path):
    """The chain verifies (it was rebuilt from the MANIFEST), but not to the head bound when judging began."""
    exp = experiment(tmp_path, server.openai_url)
    # dated a few seconds back: dates are whole seconds, and against this fast scripted server the first judgment
    # can fall in the amendment's own second, which counts as late (not strictly before judging began)
    amend(exp, "questions tagged arithmetic count double",
          now=dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5))
    out = tmp_path / "out"
    assert run(exp, out, "--arms", "--limit", "2").returncode == 0
    date = lines(exp / "amendments.jsonl")[0]["date"]
    (exp / "amendments.jsonl").unlink()
    amend(exp, "questions tagged arithmetic do not count", now=dt.datetime.fromisoformat(date))
    r = run(exp, out, "--arms", "--limit", "2")
    assert r.returncode == 2, r.stderr
    assert f"{exp / 'amendments.jsonl'}:1: field 'prev': the amendment chain was rewritten after judging" in r.stderr
    reanalyse(exp, out)
    v = cli("judge", "verify", str(out))
    assert v.returncode == 1, v.stderr
    assert f"amendments: {exp / 'amendments.jsonl'}:1: field 'prev': the amendment chain was rewritten" in v.stderr


@pytest.mark.integration
def test_amendment_times_are_compared_as_times_not_text(server, tmp_path):
    exp = experiment(tmp_path, server.openai_url)
    # 30 minutes from now, written at UTC-2: as text it sorts before any judgment time of this run
    later = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=30)).astimezone(
        dt.timezone(dt.timedelta(hours=-2)))
    amend(exp, "drop question q03", now=later)
    r = run(exp, tmp_path / "out", "--arms", "--limit", "2")
    assert r.returncode == 2, r.stderr
    assert f"{exp / 'amendments.jsonl'}:1: field 'date': amendment 1 is dated {later.isoformat(timespec='seconds')}, " \
           "after the first judgment" in r.stderr


@pytest.mark.unit
def test_amendment_at_utc_minus_two_is_after_a_judgment_two_hours_earlier_in_utc(tmp_path):
    exp = tmp_path / "demo"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    seal(exp)
    amend(exp, "late", now=dt.datetime.fromisoformat("2026-11-30T23:51:52-02:00"))  # 2026-12-01T01:51:52Z
    amend(exp, "early", now=dt.datetime.fromisoformat("2026-12-01T03:51:39+02:00"))  # 2026-12-01T01:51:39Z
    rows = amendment_rows(load_experiment(exp), "2026-12-01T01:51:40+00:00")
    assert [(a.n, a.before_first_judgment) for a in rows] == [(1, False), (2, True)]


# --- 7. the family warning names its judge --------------------------------------------------------------------

@pytest.mark.integration
def test_family_warning_names_the_judge_it_is_about(llama_server, tmp_path):
    """The normal path on llama-server (every model is its one served model): two judges, one warned about."""
    exp = experiment(tmp_path, llama_server.url + "/v1")
    text = (exp / "prereg.toml").read_text()
    for name in SERVED:
        text = text.replace(f'source = "{name}"', 'source = "smollm2-q8"')
    (exp / "prereg.toml").write_text(text)
    seal(exp)
    out = tmp_path / "out"
    r = run(exp, out, "--arms", "--limit", "2", "--judges", "openai,second")
    assert r.returncode == 0, r.stderr
    warnings = json.loads((out / "run.json").read_text())["judge"]["warnings"]
    assert warnings == [("The judge `second` shares a model family (scripted) with arm(s) base, trained: "
                         "self-preference can bias the comparison.")]
    assert "The judge `second` shares a model family" in (out / "report.md").read_text()
