"""`judge init`: every judge form, with and without an adapter, writes a registration the parser accepts and a folder
the seal check accepts; a CSV set is read through --columns; bad arguments and a non-empty folder are refused (exit
2, naming the option or folder) before anything is written; and the demo's stand-in adapter is registered by name."""
from __future__ import annotations

import csv
import json

import pandas as pd
import pytest

from judge.__main__ import main
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.seal import verify_seal

from conftest import ROOT

QUESTIONS = [{"id": "q1", "question": "What is 2 + 2?", "reference": "4"},
             {"id": "q2", "question": "Name the capital of France.", "reference": "Paris", "tags": ["geo"]}]
JUDGES = {  # --judge -> (backend, source, base_url, requires_env) the judge's model is registered with
    "local": ("llama-cpp", "embedded:smollm2", None, None),
    "openai:gpt-4o-mini": ("openai", "gpt-4o-mini", None, "OPENAI_API_KEY"),
    "anthropic:claude-sonnet-4-5": ("anthropic", "claude-sonnet-4-5", None, "ANTHROPIC_API_KEY"),
    "served:http://127.0.0.1:8080/v1": ("openai", "served", "http://127.0.0.1:8080/v1", None),
}


@pytest.fixture
def jsonl_set(tmp_path):
    path = tmp_path / "in" / "exam.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return path


@pytest.fixture
def lora(tmp_path):
    path = tmp_path / "in" / "mine.gguf"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"GGUF")  # registration names the file; only a run opens it
    return path


def _init(capsys, *args):
    code = main(["init", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.unit
@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("with_adapter", [False, True])
def test_every_judge_form_with_and_without_an_adapter_loads_and_is_sealed(tmp_path, capsys, jsonl_set, lora, judge,
                                                                         with_adapter):
    exp_dir = tmp_path / "exp"
    adapter = ["--adapter", lora] if with_adapter else []
    code, out, err = _init(capsys, exp_dir, "--base", "embedded:smollm2", "--set", jsonl_set, "--judge", judge,
                           *adapter)
    assert code == 0, err
    assert f"python -m judge run --exp {exp_dir} --arms" in out
    assert set(verify_seal(exp_dir)) == {"prereg.toml", "sets/exam.jsonl"}
    exp = load_experiment(exp_dir)
    assert (exp_dir / "sets" / "exam.jsonl").read_bytes() == jsonl_set.read_bytes()
    assert [q.id for q in load_questions(exp.set_paths())] == ["q1", "q2"]
    assert exp.rubric == "correctness"
    [spec] = exp.judges
    backend, source, url, env = JUDGES[judge]
    model = exp.models[spec.model]
    assert (model.backend, model.source, model.base_url, spec.requires_env) == (backend, source, url, env)
    if judge == "local":
        assert spec.quant == "Q8_0"
    if with_adapter:
        assert [(a.name, a.adapters, a.quants) for a in exp.arms] == [("base", (), ("Q8_0", "Q4_K_M")),
                                                                       ("trained", ("trained",), ("Q8_0", "Q4_K_M"))]
        assert exp.adapters["trained"].source == str(lora.resolve())
        assert [(h.id, h.a, h.b, h.quant, h.kind, h.margin, h.alpha) for h in exp.hypotheses] == [
            ("H1-Q8_0", "base", "trained", "Q8_0", "non_inferiority", 0.10, 0.025),
            ("H1-Q4_K_M", "base", "trained", "Q4_K_M", "non_inferiority", 0.10, 0.025)]
    else:
        assert [a.name for a in exp.arms] == ["base"] and exp.hypotheses == [] and exp.adapters == {}


@pytest.mark.unit
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_tabular_set_is_read_through_the_columns_given(tmp_path, capsys, lora, suffix):
    src = tmp_path / "in" / f"qs{suffix}"
    rows = [["What is 2 + 2?", "a1", "4"], ['Quote "this", then stop', "a2", "done"]]
    if suffix == ".csv":
        with src.open("w", newline="") as f:
            csv.writer(f).writerows([["prompt", "qid", "gold"], *rows])
    else:
        pd.DataFrame(rows, columns=["prompt", "qid", "gold"]).to_parquet(src)
    exp_dir = tmp_path / "exp"
    code, _, err = _init(capsys, exp_dir, "--base", lora, "--set", src, "--columns",
                         "id=qid,question=prompt,reference=gold", "--quants", "Q4_K_M")
    assert code == 0, err
    verify_seal(exp_dir)
    exp = load_experiment(exp_dir)
    assert exp.models["base"].source == str(lora.resolve()) and exp.arms[0].quants == ("Q4_K_M",)
    questions = load_questions(exp.set_paths(), exp.set_formats_by_path())
    assert [(q.id, q.question, q.reference) for q in questions] == [
        ("a1", "What is 2 + 2?", "4"), ("a2", 'Quote "this", then stop', "done")]


@pytest.mark.unit
@pytest.mark.parametrize(("args", "named"), [
    (["--judge", "gemini:pro"], "--judge"),
    (["--judge", "openai:"], "--judge"),
    (["--judge", "served:ftp://host/v1"], "--judge"),
    (["--quants", "Q8_0,,Q4_K_M"], "--quants"),
    (["--quants", "Q8_0,Q8_0"], "--quants"),
    (["--columns", "id=qid"], "--columns"),  # a JSONL set has no columns to map
    (["--adapter", "missing.gguf"], "--adapter"),
    (["--base", "embedded:nonesuch"], "--base"),
    (["--base", "missing.gguf"], "--base"),
])
def test_a_bad_argument_exits_2_naming_the_option_and_writes_nothing(tmp_path, capsys, jsonl_set, args, named):
    exp_dir = tmp_path / "exp"
    base = [] if "--base" in args else ["--base", "embedded:smollm2"]
    code, _, err = _init(capsys, exp_dir, *base, "--set", jsonl_set, *args)
    assert code == 2 and named in err, err
    assert not exp_dir.exists()


@pytest.mark.unit
def test_bad_columns_and_bad_sets_are_refused_naming_them(tmp_path, capsys):
    src = tmp_path / "qs.csv"
    src.write_text("qid,prompt\na1,What?\n,Empty id?\n")
    for columns, named in (("id=qid,answer=prompt", "--columns"), ("id=qid,question=qid", "--columns"),
                           ("id", "--columns")):
        code, _, err = _init(capsys, tmp_path / "exp", "--base", "embedded:smollm2", "--set", src, "--columns",
                             columns)
        assert code == 2 and named in err, err
    code, _, err = _init(capsys, tmp_path / "exp", "--base", "embedded:smollm2", "--set", src, "--columns",
                         "id=qid,question=prompt")
    assert code == 2 and "qs.csv:3" in err and "qid" in err, err  # the empty id: its file, row and column
    other = tmp_path / "qs.txt"
    other.write_text("q\n")
    code, _, err = _init(capsys, tmp_path / "exp", "--base", "embedded:smollm2", "--set", other)
    assert code == 2 and "--set" in err
    assert not (tmp_path / "exp").exists()


@pytest.mark.unit
def test_a_non_empty_folder_is_never_overwritten(tmp_path, capsys, jsonl_set):
    exp_dir = tmp_path / "exp"
    exp_dir.mkdir()
    (exp_dir / "notes.txt").write_text("mine")
    code, _, err = _init(capsys, exp_dir, "--base", "embedded:smollm2", "--set", jsonl_set)
    assert code == 2 and str(exp_dir) in err and "not empty" in err
    assert [p.name for p in exp_dir.iterdir()] == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _init(capsys, empty, "--base", "embedded:smollm2", "--set", jsonl_set)[0] == 0


@pytest.mark.unit
def test_the_demo_stand_in_adapter_is_registered_as_the_demo_registers_it(tmp_path, capsys, jsonl_set):
    """`--adapter generated:demo`: the whole way without an adapter at hand (docs/tutorial.md runs it, through to
    verify, on the embedded model); any other name that is not a file is still refused."""
    exp_dir = tmp_path / "exp"
    code, _, err = _init(capsys, exp_dir, "--base", "embedded:smollm2", "--adapter", "generated:demo", "--set",
                         jsonl_set, "--quants", "source")
    assert code == 0, err
    exp = load_experiment(exp_dir)
    assert exp.adapters["trained"].source == "generated:demo"
    assert exp.adapters["trained"].source == load_experiment(ROOT / "sealed" / "demo").adapters["demo-lora"].source
    assert [(a.name, a.adapters) for a in exp.arms] == [("base", ()), ("trained", ("trained",))]
    assert "NOT trained" in (exp_dir / "prereg.toml").read_text()
    code, _, err = _init(capsys, tmp_path / "other", "--base", "embedded:smollm2", "--adapter", "generated:other",
                         "--set", jsonl_set)
    assert code == 2 and "--adapter" in err and not (tmp_path / "other").exists(), err


@pytest.mark.unit
@pytest.mark.parametrize("existing", [False, True])
def test_a_folder_refused_after_writing_began_is_left_as_it_was(tmp_path, capsys, existing):
    """A set whose file name a MANIFEST line cannot hold passes every check but the seal's: the copy and the
    registration already written are removed, so the same command can be run again."""
    src = tmp_path / "in" / "two\nlines.jsonl"
    src.parent.mkdir()
    src.write_text(json.dumps(QUESTIONS[0]) + "\n")
    exp_dir = tmp_path / "exp"
    if existing:
        exp_dir.mkdir()
    code, _, err = _init(capsys, exp_dir, "--base", "embedded:smollm2", "--set", src)
    assert code == 2 and "line break" in err, err
    assert (list(exp_dir.iterdir()) == []) if existing else not exp_dir.exists()


@pytest.mark.unit
def test_a_folder_inside_a_sealed_experiment_is_refused(tmp_path, capsys, jsonl_set):
    """Written there, the new folder would change the sealed one, and every later run of it would be refused."""
    outer = tmp_path / "outer"
    assert _init(capsys, outer, "--base", "embedded:smollm2", "--set", jsonl_set)[0] == 0
    code, _, err = _init(capsys, outer / "inner", "--base", "embedded:smollm2", "--set", jsonl_set)
    assert code == 2 and "DIR" in err and str(outer) in err, err
    assert set(verify_seal(outer)) == {"prereg.toml", "sets/exam.jsonl"} and not (outer / "inner").exists()
