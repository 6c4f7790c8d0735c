"""Validate before paying: every bad registration or input is refused before the first model call.

Each test edits a sealed copy of the demo, reseals it, runs `judge run` as a user would and checks:
exit 2, a message naming the file, the line and the field, no traceback, and that no model call was
made: the run's private call cache holds no call and no answers.jsonl was written. (Were a call made,
collection would have stored it in the cache and written its row.)
"""
from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from registration.seal import seal

from conftest import ROOT, cli

DEMO = ROOT / "sealed" / "demo"
PREREG = (DEMO / "prereg.toml").read_text()
EXAM = (DEMO / "sets" / "exam.jsonl").read_text()


def _line(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line of `text` containing `needle` (found by the test, not by the code under test)."""
    hits = [no for no, line in enumerate(text.splitlines(), start=1) if needle in line]
    return hits[nth - 1]


def experiment(tmp_path: Path, prereg: str = PREREG, sets: dict[str, str] | None = None) -> Path:
    """A sealed copy of the demo with this prereg.toml and these set files (name -> text)."""
    exp = tmp_path / "demo"
    shutil.copytree(DEMO, exp)
    (exp / "prereg.toml").write_text(prereg)
    for name, text in (sets or {}).items():
        (exp / "sets" / name).write_text(text)
    seal(exp)
    return exp


def refused(exp: Path, tmp_path: Path, *args: str) -> str:
    """Run the demo command on `exp`; assert it was refused before any model call; return stderr."""
    cache, out = tmp_path / "cache", tmp_path / "out"
    r = cli("judge", "run", "--exp", str(exp), "--out", str(out), "--quiet", *args,
            env={"BLINDEVAL_CACHE": str(cache)}, timeout=300)
    assert r.returncode == 2, (r.returncode, r.stderr[-3000:])
    assert "Traceback" not in r.stderr
    assert not (out / "answers.jsonl").exists()
    db = cache / "calls.sqlite"
    if db.exists():
        with sqlite3.connect(db) as c:
            assert c.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 0
    return r.stderr


def assert_names(stderr: str, file: Path, line: int | None, field: str) -> None:
    where = f"{file}:{line}:" if line is not None else f"{file}:"
    assert where in stderr, (where, stderr)
    assert f"field '{field}'" in stderr, stderr


def edit(old: str, new: str, count: int = 1) -> str:
    assert old in PREREG
    return PREREG.replace(old, new, count)


# ---- wrong types and out-of-range values in the registration ----------------------------------------------

H1 = 'kind = "non_inferiority"\nmargin = 0.10\nalpha = 0.025'


@pytest.mark.integration
@pytest.mark.parametrize("new, field, needle", [
    ('kind = "non_inferiority"\nmargin = 0.10\nalpha = "x"', "alpha", 'alpha = "x"'),
    ('kind = "non_inferiority"\nmargin = "ten percent"\nalpha = 0.025', "margin", 'margin = "ten percent"'),
    ('kind = "non_inferiority"\nmargin = -0.5\nalpha = 0.025', "margin", "margin = -0.5"),
    ('kind = "non_inferiority"\nmargin = 0.10\nalpha = 0.5', "alpha", "alpha = 0.5"),
    ('kind = "non_inferiority"\nmargin = 0.10\nalpha = 0', "alpha", "alpha = 0"),
    ('kind = "equivalence"\nmargin = 0\nalpha = 0.025', "margin", "margin = 0\n"),
])
def test_a_bad_hypothesis_value_is_refused_at_its_line(tmp_path, new, field, needle):
    text = edit(H1, new)
    exp = experiment(tmp_path, text)
    err = refused(exp, tmp_path)
    assert_names(err, exp / "prereg.toml", _line(text, needle.strip()), field)
    assert "[[hypotheses]] #1" in err


@pytest.mark.integration
@pytest.mark.parametrize("old, new, field", [
    ("resamples = 10000", 'resamples = "many"', "resamples"),
    ("resamples = 10000", "resamples = 0", "resamples"),
    ("resamples = 10000", "resamples = -5", "resamples"),
    ("max_unscored = 0.10", "max_unscored = -1", "max_unscored"),
    ("max_unscored = 0.10", "max_unscored = 1.5", "max_unscored"),
    ('method = "percentile"', 'method = 1', "method"),
    ("n_ctx = 2048", 'n_ctx = "2048"', "n_ctx"),
    ("verdict_attempts = 2 ", "verdict_attempts = 0 ", "verdict_attempts"),
    ("max_tokens = 64, seed = 0, system", 'max_tokens = "many", seed = 0, system', "max_tokens"),
    ("k = 40", "k = 40.5", "k"),
])
def test_a_bad_setting_is_refused_at_its_line(tmp_path, old, new, field):
    text = edit(old, new)
    exp = experiment(tmp_path, text)
    assert_names(refused(exp, tmp_path), exp / "prereg.toml", _line(text, new), field)


@pytest.mark.integration
def test_sets_as_a_string_names_the_field(tmp_path):
    text = edit('sets = ["sets/exam.jsonl"]', 'sets = "sets/exam.jsonl"')
    exp = experiment(tmp_path, text)
    err = refused(exp, tmp_path)
    assert_names(err, exp / "prereg.toml", _line(text, 'sets = "sets/exam.jsonl"'), "sets")
    assert "list of strings" in err


# ---- ids are unique ---------------------------------------------------------------------------------------

@pytest.mark.integration
def test_a_repeated_hypothesis_id_is_refused(tmp_path):
    text = edit('id = "H1-Q4_K_M"', 'id = "H1-Q8_0"')
    exp = experiment(tmp_path, text)
    err = refused(exp, tmp_path)
    assert_names(err, exp / "prereg.toml", _line(text, 'id = "H1-Q8_0"', 2), "id")
    assert "H1-Q8_0" in err and "unique" in err


@pytest.mark.integration
def test_a_repeated_arm_name_is_refused(tmp_path):
    text = edit('name = "glue-base"', 'name = "base"')
    exp = experiment(tmp_path, text)
    assert_names(refused(exp, tmp_path), exp / "prereg.toml", _line(text, 'name = "base"', 2), "name")


@pytest.mark.integration
@pytest.mark.parametrize("table", ["[models.gpt]", "[judges.local]"])
def test_a_repeated_model_or_judge_is_refused_by_toml_at_its_line(tmp_path, table):
    """TOML itself refuses a table declared twice; the message is still exit 2 with the line and the name."""
    block = re.search(rf"(?ms)^{re.escape(table)}\n.*?\n\n", PREREG).group(0)
    text = PREREG + "\n" + block
    exp = experiment(tmp_path, text)
    err = refused(exp, tmp_path)
    assert_names(err, exp / "prereg.toml", _line(text, table, 2), table.strip("[]"))
    assert "twice" in err


@pytest.mark.integration
def test_a_question_id_repeated_in_another_set_is_refused(tmp_path):
    text = edit('sets = ["sets/exam.jsonl"]', 'sets = ["sets/exam.jsonl", "sets/more.jsonl"]')
    more = '{"id": "q90", "question": "Is it open?"}\n{"id": "q07", "question": "Again?"}\n'
    exp = experiment(tmp_path, text, {"more.jsonl": more})
    err = refused(exp, tmp_path)
    assert_names(err, exp / "sets" / "more.jsonl", 2, "id")
    assert "q07" in err and "exam.jsonl:7" in err


@pytest.mark.integration
def test_a_judge_named_twice_on_the_command_line_is_refused(tmp_path):
    err = refused(experiment(tmp_path), tmp_path, "--judges", "local,local")
    assert "--judges:" in err and "field 'judges'" in err and "twice" in err


# ---- registrations that only failed after paying ---------------------------------------------------------

@pytest.mark.integration
def test_a_subset_no_question_carries_is_refused(tmp_path):
    text = edit(H1, H1 + '\nsubset = ["in_contxt"]')
    exp = experiment(tmp_path, text)
    err = refused(exp, tmp_path)
    assert_names(err, exp / "prereg.toml", _line(text, 'subset = ["in_contxt"]'), "subset")
    assert "in_context" in err  # the tags that do exist are listed


@pytest.mark.integration
def test_an_unknown_rubric_is_refused(tmp_path):
    text = edit('rubric = "correctness"', 'rubric = "corectness"')
    exp = experiment(tmp_path, text)
    assert_names(refused(exp, tmp_path), exp / "prereg.toml", _line(text, 'rubric = "corectness"'), "rubric")


@pytest.mark.integration
def test_a_quant_the_arm_does_not_register_is_refused(tmp_path):
    text = edit('quant = "Q8_0"\nkind', 'quant = "Q5_K_M"\nkind')
    exp = experiment(tmp_path, text)
    assert_names(refused(exp, tmp_path), exp / "prereg.toml", _line(text, 'quant = "Q5_K_M"'), "quant")


@pytest.mark.integration
@pytest.mark.parametrize("old, new, field", [
    ('family = "smollm2"', 'family = "smollm2"\nimatrix = "models/imatrix.gguf"', "imatrix"),
    ('source = "generated:demo"', 'source = "adapters/mine.gguf"', "source"),
])
def test_a_missing_model_file_is_refused_before_the_first_model_loads(tmp_path, old, new, field):
    """Today a file read at a later model load fails only after the answers of the models loaded first were paid."""
    text = edit(old, new)
    exp = experiment(tmp_path, text)
    err = refused(exp, tmp_path)
    assert_names(err, exp / "prereg.toml", _line(text, new.splitlines()[-1]), field)
    assert "is not a file" in err


# ---- bad question sets ------------------------------------------------------------------------------------

def _exam_with(line_no: int, record: str) -> str:
    lines = EXAM.splitlines()
    lines[line_no - 1] = record
    return "\n".join(lines) + "\n"


@pytest.mark.integration
def test_a_cluster_that_is_a_list_is_refused(tmp_path):
    exp = experiment(tmp_path,
                     sets={"exam.jsonl": _exam_with(4, '{"id": "q04", "question": "Why?", "cluster": ["d01"]}')})
    err = refused(exp, tmp_path)
    assert_names(err, exp / "sets" / "exam.jsonl", 4, "cluster")


@pytest.mark.integration
def test_an_empty_set_file_is_refused(tmp_path):
    exp = experiment(tmp_path, sets={"exam.jsonl": ""})
    err = refused(exp, tmp_path)
    assert f"{exp / 'sets' / 'exam.jsonl'}:" in err and "no questions" in err


@pytest.mark.integration
def test_a_repeated_json_key_is_refused(tmp_path):
    record = '{"id": "q05", "question": "How much?", "reference": "10 crowns.", "reference": "20 crowns."}'
    exp = experiment(tmp_path, sets={"exam.jsonl": _exam_with(5, record)})
    err = refused(exp, tmp_path)
    assert_names(err, exp / "sets" / "exam.jsonl", 5, "reference")
    assert "twice" in err


# ---- a question that cannot fit a context -----------------------------------------------------------------

def _vocab():
    from models.files import embedded_model
    from models.llama_loader import load_vocab

    return load_vocab(embedded_model("smollm2"))


def _long_question(tokens: int) -> str:
    """A question of about `tokens` SmolLM2 tokens, counted by the test itself."""
    vocab, words, text = _vocab(), "the deposit for a bike is returned when the bike is back".split(), ""
    while len(vocab.tokenize(text.encode(), add_bos=False, special=True)) < tokens:
        text += " ".join(words) + ". "
    return text.strip()


def _counts(err: str) -> dict[str, int]:
    m = re.search(r"the prompt is (\d+) tokens(?: with the answer left empty, the answers up to (\d+) \(the arms' "
                  r"max_tokens\))?, max_tokens (\d+); together (\d+) > n_ctx (\d+)", err)
    assert m, err
    prompt, answer, max_tokens, total, n_ctx = (int(x) if x else 0 for x in m.groups())
    assert prompt + answer + max_tokens == total > n_ctx == 2048
    return {"prompt": prompt, "answer": answer, "max_tokens": max_tokens}


@pytest.mark.integration
def test_a_question_too_long_for_the_judge_is_refused_before_any_answer(tmp_path):
    """About 1,800 tokens: the arm's prompt fits (with its 64 max_tokens), the judge's prompt with the rubric, the
    reference and room for a 64-token answer does not (the 9.4 KB question that crashed the judge stage)."""
    question = _long_question(1800)
    record = json.dumps({"id": "q01", "question": question, "reference": "Yes.", "cluster": "d01"})
    exp = experiment(tmp_path, sets={"exam.jsonl": _exam_with(1, record)})
    err = refused(exp, tmp_path, "--arms", "base", "--limit", "2")
    assert_names(err, exp / "sets" / "exam.jsonl", 1, "question")
    assert "'q01'" in err and "judge 'local'" in err and "rubric 'correctness'" in err
    n = _counts(err)
    own = len(_vocab().tokenize(question.encode(), add_bos=False, special=True))
    assert own < n["prompt"] < own + 600  # the question, plus the rubric's system text and template
    assert n["answer"] == 64 and n["max_tokens"] == 96  # the demo arm's and the rubric's registered max_tokens


@pytest.mark.integration
def test_a_question_too_long_for_the_arm_is_refused(tmp_path):
    question = "How much is the deposit? " * 40_000  # about 1 MB
    record = json.dumps({"id": "q02", "question": question})
    exp = experiment(tmp_path, sets={"exam.jsonl": _exam_with(2, record)})
    err = refused(exp, tmp_path, "--arms", "base")
    assert_names(err, exp / "sets" / "exam.jsonl", 2, "question")
    assert "'q02'" in err and "arm 'base'" in err
    n = _counts(err)
    assert n["prompt"] > 40_000 * 5 and n["max_tokens"] == 64


@pytest.mark.integration
def test_a_glue_prompt_too_long_is_refused(tmp_path):
    """The glue arm's prompt (retrieved articles + question) is measured by stopping the glue at its first call: a
    question of about 1,900 tokens fits the plain arm "base" (checked first) but not behind the glue's context."""
    question = _long_question(1900) + " How much does an Annual membership cost?"
    record = json.dumps({"id": "q01", "question": question})
    exp = experiment(tmp_path, sets={"exam.jsonl": _exam_with(1, record)})
    err = refused(exp, tmp_path, "--arms", "base,glue-base", "--limit", "1")
    assert_names(err, exp / "sets" / "exam.jsonl", 1, "question")
    assert "arm 'glue-base'" in err and "'q01'" in err
    n = _counts(err)
    own = len(_vocab().tokenize(question.encode(), add_bos=False, special=True))
    assert n["prompt"] > own + 100 and n["max_tokens"] == 64  # the retrieved context is in the count


# ---- margin 0: the natural superiority registration works end to end ----------------------------------------

def _margin_zero_prereg(url: str) -> str:
    from conftest import http_prereg

    text = http_prereg("margin0", f"{url}/v1", f"""[models.arm]
backend = "openai"
source = "arm-model"
base_url = "{url}/v1"
timeout_s = 5

[[arms]]
name = "old"
model = "arm"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 64, seed = 0, system = "OLD" }}

[[arms]]
name = "new"
model = "arm"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 64, seed = 0, system = "NEW" }}
""", [("S0", "old", "new"), ("N0", "old", "new")])
    text = text.replace('kind = "non_inferiority"\nmargin = 0.10', 'kind = "superiority"\nmargin = 0', 1)
    return text.replace('kind = "non_inferiority"\nmargin = 0.10', 'kind = "non_inferiority"\nmargin = 0', 1)


@pytest.fixture(scope="module")
def margin_zero_run(tmp_path_factory) -> Path:
    """A finished run of two HTTP arms ("old", "new") judged by an HTTP judge, all scripted, with a superiority
    and a non-inferiority hypothesis registered at margin 0. Scores planted by the judge: "new" 2 on every
    question, "old" 1 except 2 on q02."""
    from support.scripted_server import ScriptedServer, reply, verdict

    def script(seen):
        if seen.model == "judge-model":
            new = "new answer." in seen.prompt
            q02 = "Concession Card holder buy a cheaper Day Pass" in seen.prompt
            return verdict({"rationale": "Graded.", "score": 2 if new or q02 else 1, "harmful": False})
        return reply(("new" if "NEW" in seen.prompt else "old") + " answer.")

    root = tmp_path_factory.mktemp("margin0")
    exp, out = root / "exp", root / "out"
    shutil.copytree(DEMO, exp)
    env = {"OPENAI_API_KEY": "sk-test", "BLINDEVAL_CACHE": str(root / "cache")}
    with ScriptedServer(script, models=("arm-model", "judge-model")) as server:
        (exp / "prereg.toml").write_text(_margin_zero_prereg(server.url))
        seal(exp)
        r = cli("judge", "run", "--exp", str(exp), "--arms", "--out", str(out), "--quiet", env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.integration
def test_margin_zero_decides_superiority_and_non_inferiority(margin_zero_run):
    """The differences are 1 on 39 questions and 0 on q02 (mean 39/40), in the demo's 11 clusters: every bound
    of every registered rule is far above 0, so superior under both registrations. There is no margin to
    detect: n for margin is None, shown as '–'. verify recomputes it all."""
    numbers = json.loads((margin_zero_run / "numbers.json").read_text())
    by = {c["id"]: c for c in numbers["comparisons"]}
    for hid, kind in (("S0", "superiority"), ("N0", "non_inferiority")):
        c = by[hid]
        assert (c["kind"], c["margin"], c["verdict"]) == (kind, 0.0, "superior")
        assert c["result"]["n"] == 40 and c["result"]["diff"] == pytest.approx(39 / 40)
        assert c["result"]["bound"] > 0 and c["result"]["n_for_margin"] is None
    row = next(line for line in (margin_zero_run / "report.md").read_text().splitlines() if line.startswith("| S0 "))
    assert "| 0.00 |" in row and "| – |" in row
    v = cli("judge", "verify", str(margin_zero_run), "--cache", str(margin_zero_run.parent / "cache"), timeout=120)
    assert v.returncode == 0, v.stdout + v.stderr


@pytest.mark.integration
def test_a_repeated_json_key_in_a_raw_file_is_refused(margin_zero_run, tmp_path):
    """A judgment line carrying "score" twice: readers that keep the last value would see another score."""
    run = tmp_path / "run"
    shutil.copytree(margin_zero_run, run)
    path = run / "judgments.jsonl"
    lines = path.read_text().splitlines()
    assert '"score":' in lines[2]
    lines[2] = lines[2][:-1] + ',"score":0}'
    path.write_text("\n".join(lines) + "\n")
    v = cli("judge", "verify", str(run), timeout=120)
    assert v.returncode == 2, v.stdout + v.stderr
    assert_names(v.stdout + v.stderr, path, 3, "score")
    assert "Traceback" not in v.stderr


@pytest.mark.integration
def test_a_glue_answer_too_long_for_the_judge_is_refused_before_any_verdict(tmp_path, private_cache):
    """A glue may return more than its model wrote (here without calling it): once answers are known, every judge
    prompt is checked before the first verdict. The session cache holds this model's quant files, so no quantising."""
    import os

    (tmp_path / "longglue.py").write_text("from arms.glue import GlueResult\n\n\ndef answer(question, call_model, "
                                          "experiment_dir):\n    return GlueResult('The deposit is returned. ' "
                                          "* 400)\n")
    arm = ('[[arms]]\nname = "long"\nmodel = "smollm2-135m"\nglue = "longglue:answer"\nquants = ["Q8_0"]\n'
           'generation = { temperature = 0.0, max_tokens = 64, seed = 0 }\n\n[judge]')
    exp = experiment(tmp_path, edit("[judge]", arm))
    db = private_cache / "calls.sqlite"

    def calls() -> int:
        if not db.exists():
            return 0
        with sqlite3.connect(db) as c:
            return c.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    before, out = calls(), tmp_path / "out"
    r = cli("judge", "run", "--exp", str(exp), "--arms", "long", "--limit", "1", "--out", str(out), "--quiet",
            env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}, timeout=600)
    assert r.returncode == 2, r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    assert f"{out / 'answers.jsonl'}:" in r.stderr and "field 'text'" in r.stderr
    assert "'q01'" in r.stderr and "judge 'local'" in r.stderr and "No verdict was asked for" in r.stderr
    m = re.search(r"the prompt is (\d+) tokens, max_tokens 96; together (\d+) > n_ctx 2048", r.stderr)
    assert m and int(m.group(1)) + 96 == int(m.group(2)) and int(m.group(1)) > 400 * 4  # 4+ tokens a repeat
    assert calls() == before  # the glue called no model, and no verdict was asked
    assert not (out / "judgments.jsonl").exists() or not (out / "judgments.jsonl").read_text()
    assert len((out / "answers.jsonl").read_text().splitlines()) == 1  # the answer is kept


@pytest.mark.integration
def test_a_repeated_json_key_in_a_reward_log_is_refused(tmp_path):
    """The audit reads users' training logs through the same reader: a line with "reward" twice is refused."""
    log = tmp_path / "run.jsonl"
    lines = (DEMO / "training" / "run2.jsonl").read_text().splitlines()[:5]
    assert '"reward":' in lines[3]
    lines[3] = lines[3][:-1] + ', "reward": 99.0}'
    log.write_text("\n".join(lines) + "\n")
    r = cli("audit", "rewards", str(log), "--out", str(tmp_path / "out"), "--quiet")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert_names(r.stderr, log, 4, "reward")


@pytest.mark.unit
def test_the_line_is_found_in_sub_tables_and_after_multi_line_values(tmp_path):
    """Keys inside an [arms.generation] sub-table of the second arm, after a multi-line string and a multi-line
    array that contain look-alike `key = value` lines: the line reported is the offending key's own."""
    from core.errors import BadInput
    from registration.prereg import load_experiment

    text = PREREG.replace('[models.claude]', '[models.claude]\napi_key_env = """\nmax_tokens = 1\n"""', 1)
    text = text.replace('sets = ["sets/exam.jsonl"]', 'sets = [\n  "sets/exam.jsonl",\n]', 1)
    trained = 'adapter = "demo-lora"\nquants = ["Q8_0", "Q4_K_M"]\ngeneration = { temperature = 0.0, ' \
              'max_tokens = 64, ' \
              'seed = 0, system = "Answer the question in one or two sentences." }\n'
    assert trained in text
    text = text.replace(trained, 'adapter = "demo-lora"\nquants = ["Q8_0", "Q4_K_M"]\n\n[arms.generation]\n'
                                 'system = """\nmax_tokens = 2\n"""\nstop = [\n  "a",\n  "b",\n]\n'
                                 'temperature = 0.0\nmax_tokens = "many"\nseed = 0\n', 1)
    exp = tmp_path / "demo"
    shutil.copytree(DEMO, exp)
    (exp / "prereg.toml").write_text(text)
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert (e.value.field, e.value.line) == ("max_tokens", _line(text, 'max_tokens = "many"'))
    assert "[[arms]] #2" in str(e.value)


@pytest.mark.integration
@pytest.mark.parametrize("gold, name, text, line, field", [
    ('[gold]\nprogram = "broken.py:score"\n', "broken.py", "def score(q, r, a):\n    return (\n", 2, "program"),
    ('[gold]\nlabels = ["g.jsonl"]\n', "g.jsonl", '{"type":"gold","question_id":"q99","answer_sha256":"' + "0" * 64
     + '","score":2,"labeller":"x","time":"2026-01-01T00:00:00+00:00"}\n', 1, "question_id"),
])
def test_a_gold_source_that_cannot_be_used_is_refused_before_any_model_call(tmp_path, gold, name, text, line, field):
    """A gold program that does not compile, a sealed gold labels file naming no registered question (the other
    cases: tests/test_gold.py, on the same check)."""
    exp = tmp_path / "demo"
    shutil.copytree(DEMO, exp)
    (exp / "prereg.toml").write_text(PREREG.replace('[gold]\nprogram = "gold.py:score"\n', gold))
    (exp / name).write_text(text)
    seal(exp)
    assert_names(refused(exp, tmp_path, "--arms", "base", "--limit", "1"), exp / name, line, field)


@pytest.mark.integration
@pytest.mark.parametrize("stop, limit, words", [
    ("raise SystemExit(0)", "", "exited (SystemExit(0))"),
    ("import os\n    os._exit(0)", "", "ended the process (exit status 0)"),
    ("while True:\n        pass", "timeout_s = 1\n", "did not finish within its time limit of 1 s"),
])
def test_a_gold_program_that_ends_or_hangs_its_process_is_refused_before_any_model_call(tmp_path, stop, limit, words):
    """The program is scored once on a reference answer before paying: one that exits or hangs there stops the run
    (exit 2) naming prereg.toml's program line, what happened and the question, never an exit 0 without numbers."""
    exp = tmp_path / "demo"
    shutil.copytree(DEMO, exp)
    text = PREREG.replace('[gold]\nprogram = "gold.py:score"\n', f'[gold]\nprogram = "stops.py:score"\n{limit}')
    (exp / "prereg.toml").write_text(text)
    (exp / "stops.py").write_text(f"def score(question, reference, answer):\n    {stop}\n")
    seal(exp)
    stderr = refused(exp, tmp_path, "--arms", "base", "--limit", "1")
    assert_names(stderr, exp / "prereg.toml", _line(text, 'program = "stops.py:score"'), "program")
    # q01 is the demo's first question, and it has a reference answer
    assert words in stderr and "stops.py:score" in stderr and "on question 'q01'" in stderr, stderr
