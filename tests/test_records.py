"""The record contracts (core.records), end to end through the CLIs against a real HTTP server.

A rubric's name decides nothing: an experiment whose single-answer rubric is called `helpfulness` (its own,
in the experiment's rubrics/ folder and sealed with it) is judged in both modes, its cells are scored and
`judge verify` passes. A raw record missing a field is bad input (exit 2) naming the file, line and field,
never a traceback. A folder written before records carried `type`, `version` and `kind` reads the same.
"""
from __future__ import annotations

import json
import re
import shutil

import pytest

from core import jsonl
from core.errors import BadInput
from core.records import AnswerRow, Judgment, KeyRow, PairKey, RunInfo, blinding_key
from judge.gold.sources import run_gold
from judge.numbers.analysis import compute_numbers
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.seal import seal

from conftest import ROOT, cli, http_prereg
from support.scripted_server import ScriptedServer, Seen, Step, reply, verdict

pytestmark = pytest.mark.integration  # a scripted-server run of a sealed demo copy

ENV = {"OPENAI_API_KEY": "sk-test"}
ARMS = """[models.arm]
backend = "openai"
source = "arm-model"
base_url = "{url}/v1"
family = "scripted"
timeout_s = 5

[[arms]]
name = "alpha"
model = "arm"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 64, seed = 0, system = "ALPHA" }}

[[arms]]
name = "beta"
model = "arm"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 64, seed = 0, system = "BETA" }}
"""


def script(seen: Seen) -> Step:
    """Arm alpha answers "alpha answer", beta "beta answer". The judge gives beta 2 and alpha 1, and in a pair
    prefers beta in either position: planted facts the numbers are checked against."""
    if seen.model == "arm-model":
        return reply("beta answer." if "BETA" in seen.prompt else "alpha answer.")
    if "<<<FIRST" in seen.prompt:
        first = seen.prompt.split("<<<FIRST", 1)[1].split("FIRST>>>", 1)[0]
        return verdict({"rationale": "beta is better.", "preferred": 1 if "beta" in first else 2})
    answer = seen.prompt.split("<<<CANDIDATE", 1)[1].split("CANDIDATE>>>", 1)[0]
    return verdict({"rationale": "graded.", "score": 2 if "beta" in answer else 1, "harmful": False})


@pytest.fixture(scope="module")
def helpfulness(tmp_path_factory):
    """A sealed copy of the demo whose rubric is its own `helpfulness` (the correctness rubric renamed), judged in
    both modes by a scripted HTTP judge; yields (exp, out, env, the server)."""
    root = tmp_path_factory.mktemp("records")
    exp, out = root / "exp", root / "run"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    (exp / "rubrics").mkdir()
    toml = (ROOT / "rubrics" / "correctness.toml").read_text()
    (exp / "rubrics" / "helpfulness.toml").write_text(
        toml.replace('name = "correctness"', 'name = "helpfulness"').replace('"correctness.j2"', '"helpfulness.j2"'))
    shutil.copy(ROOT / "rubrics" / "correctness.j2", exp / "rubrics" / "helpfulness.j2")
    with ScriptedServer(script, models=("arm-model", "judge-model")) as server:
        prereg = http_prereg("records", f"{server.url}/v1", ARMS.format(url=server.url), [("H", "alpha", "beta")],
                             judge_settings="timeout_s = 5\n")
        assert 'rubric = "correctness"' in prereg
        prereg = prereg.replace('rubric = "correctness"', 'rubric = "helpfulness"\nmode = "both"')
        (exp / "prereg.toml").write_text(prereg)
        seal(exp)
        env = {**ENV, "BLINDEVAL_CACHE": str(root / "cache")}
        r = cli("judge", "run", "--exp", str(exp), "--limit", "3", "--out", str(out), "--quiet", env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        yield exp, out, env, server


def test_a_rubric_of_any_name_is_scored_and_verifies(helpfulness):
    exp, out, env, _ = helpfulness
    numbers = json.loads((out / "numbers.json").read_text())
    cells = {c["arm"]: c for c in numbers["cells"]}
    assert {a: (c["scored"], c["mean"]) for a, c in cells.items()} == {"alpha": (3, 1.0), "beta": (3, 2.0)}
    assert numbers["judge_totals"] == {"openai/helpfulness": {"scored": 6, "unscored": 0, "error": 0, "repaired": 0},
                                       "openai/pairwise": {"scored": 6, "unscored": 0, "error": 0, "repaired": 0}}
    (pw,) = numbers["judges"]["pairwise"]["openai"]
    assert (pw["both_orders_scored"], pw["consistent"], pw["wins_b"], pw["wins_a"]) == (3, 3, 3, 0)
    kinds = [r["kind"] for _, r in jsonl.read(out / "judgments.jsonl")]
    assert sorted(kinds) == ["pairwise"] * 6 + ["single"] * 6
    v = cli("judge", "verify", str(out), env=env, timeout=300)
    assert v.returncode == 0, v.stderr


def test_every_raw_record_has_a_type_and_a_version(helpfulness):
    _, out, _, _ = helpfulness
    types = {name: {(r["type"], r["version"]) for _, r in jsonl.read(out / name)}
             for name in ("answers.jsonl", "blinding.jsonl", "judgments.jsonl")}
    assert types == {"answers.jsonl": {("answer", 1)}, "blinding.jsonl": {("blinding", 1), ("pair", 1)},
                     "judgments.jsonl": {("judgment", 1)}}


def _numbers(exp, out) -> dict:
    run = json.loads((out / "run.json").read_text())
    e = load_experiment(exp)
    return compute_numbers(e, load_questions(e.set_paths()), out, RunInfo.from_dict(run, "run.json"),
                           run_gold(e, out)).to_dict()


def test_a_folder_written_before_records_carried_type_version_and_kind_reads_the_same(helpfulness, tmp_path):
    exp, out, _, _ = helpfulness
    old = tmp_path / "old"
    shutil.copytree(out, old)
    for name in ("answers.jsonl", "blinding.jsonl", "judgments.jsonl"):
        recs = [{k: v for k, v in r.items() if k not in ("version", "kind")} for _, r in jsonl.read(old / name)]
        if name != "blinding.jsonl":  # a blinding key's type was always written: it tells a pair from a single
            recs = [{k: v for k, v in r.items() if k != "type"} for r in recs]
        (old / name).write_text("".join(jsonl.dumps(r) + "\n" for r in recs))
        assert all("kind" not in r and "version" not in r for _, r in jsonl.read(old / name))
    now, before = _numbers(exp, out), _numbers(exp, old)
    for key in ("cells", "comparisons", "judges", "judge_totals"):
        assert before[key] == now[key], key


def _drop(out, name: str, field: str, line: int) -> None:
    lines = (out / name).read_text().splitlines()
    rec = json.loads(lines[line - 1])
    del rec[field]
    lines[line - 1] = jsonl.dumps(rec)
    (out / name).write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("name, field, line", [("answers.jsonl", "latency_s", 2), ("blinding.jsonl", "arm", 1),
                                               ("blinding.jsonl", "first", None), ("judgments.jsonl", "attempts", 3)])
def test_a_record_missing_a_field_is_bad_input_naming_file_line_and_field(helpfulness, tmp_path, name, field, line):
    exp, out, env, server = helpfulness
    if line is None:  # a pair key's line
        line = next(no for no, r in jsonl.read(out / name) if r["type"] == "pair")
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    _drop(bad, name, field, line)
    where = f"{bad / name}:{line}: field '{field}'"
    v = cli("judge", "verify", str(bad), env=env, timeout=300)
    assert v.returncode == 2, v.stderr
    assert where in v.stderr and "missing" in v.stderr and "Traceback" not in v.stderr, v.stderr
    calls = len(server.seen)
    r = cli("judge", "run", "--exp", str(exp), "--limit", "3", "--out", str(bad), "--quiet", env=env, timeout=300)
    assert r.returncode == 2, r.stderr
    assert where in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(server.seen) == calls  # every call was made already: nothing is asked again


@pytest.mark.parametrize("cls, field, value", [(AnswerRow, "sample", "0"), (KeyRow, "scrubbed", None),
                                               (Judgment, "repaired", 1), (Judgment, "kind", "triple")])
def test_an_ill_typed_field_is_bad_input_naming_it(helpfulness, cls, field, value):
    _, out, _, _ = helpfulness
    name = {AnswerRow: "answers.jsonl", KeyRow: "blinding.jsonl", Judgment: "judgments.jsonl"}[cls]
    rec = next(r for _, r in jsonl.read(out / name) if r["type"] == cls.TYPE)
    assert cls.from_dict(rec, name, 5).to_dict() == rec  # as written, read back whole
    with pytest.raises(BadInput, match=re.escape(f"{name}:5: field '{field}': reads {value!r}")):
        cls.from_dict({**rec, field: value}, name, 5)


def test_a_newer_record_version_or_a_foreign_type_is_refused(helpfulness):
    _, out, _, _ = helpfulness
    rec = next(r for _, r in jsonl.read(out / "blinding.jsonl") if r["type"] == "pair")
    assert isinstance(blinding_key(rec), PairKey)
    with pytest.raises(BadInput, match="field 'version'"):
        blinding_key({**rec, "version": 2}, "blinding.jsonl", 1)
    with pytest.raises(BadInput, match="field 'type'"):
        Judgment.from_dict({**rec, "type": "pair"}, "judgments.jsonl", 1)
