"""Gold scores: the [gold] registration, its sources (sealed labels files, a gold program, people's labels) and the
design each score carries. Every expected value is planted or counted by hand here."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arms.folder import gold_entries, label_key, registration
from core.errors import BadInput
from core.records import KeyRow, row_id
from judge.gold.labels import run_key
from judge.gold.sources import check_gold, gold_set
from judge.judging.blinding import BlindItem, label_for, label_secret
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.seal import seal

from conftest import ROOT

pytestmark = pytest.mark.unit

DEMO = ROOT / "sealed" / "demo"
PREREG = (DEMO / "prereg.toml").read_text()
SCALE = (0, 1, 2)
GOLD = '[gold]\nprogram = "gold.py:score"\n'
assert GOLD in PREREG


def line_of(text: str, needle: str) -> int:
    """The line of `needle` in the [gold] table, found by the test."""
    start = text.splitlines().index("[gold]")
    return next(no for no, line in enumerate(text.splitlines(), start=1) if no > start and needle in line)


def experiment(tmp_path: Path, gold: str = GOLD, files: dict[str, str] | None = None, sealed: bool = True) -> Path:
    """A copy of the demo with this [gold] table and these extra files, sealed."""
    exp = tmp_path / "exp"
    shutil.copytree(DEMO, exp)
    (exp / "prereg.toml").write_text(PREREG.replace(GOLD, gold))
    for name, text in (files or {}).items():
        (exp / name).parent.mkdir(parents=True, exist_ok=True)
        (exp / name).write_text(text)
    if sealed:
        seal(exp)
    return exp


def answers(exp_dir: Path, texts: dict[tuple[str, str], str]) -> tuple[list[BlindItem], list[KeyRow], dict]:
    """Blinded items and keys for (arm, question) -> answer text, at Q8_0, sample 0, labelled as judge run labels."""
    exp = load_experiment(exp_dir)
    secret = label_secret(label_key(exp))
    qs = {q.id: q for q in load_questions(exp.set_paths())}
    items, keys = [], []
    for (arm, qid), text in texts.items():
        row = row_id(arm, "Q8_0", qid, 0)
        lab = label_for(secret, row)
        items.append(BlindItem(lab, qid, qs[qid].question, qs[qid].reference, text))
        keys.append(KeyRow(lab, row, arm, "Q8_0", qid, 0, 0))
    return items, keys, {q: qs[q] for q in dict.fromkeys(q for _, q in texts)}


def gold(exp_dir: Path, texts: dict, run_dir: Path | None = None):
    exp = load_experiment(exp_dir)
    items, keys, qs = answers(exp_dir, texts)
    g = gold_set(exp, items, keys, qs, SCALE, label_key(exp), run_dir)
    return g, {i.label: k for i, k in zip(items, keys, strict=True)}


# ---- registration -------------------------------------------------------------------------------------------

toml_values = st.one_of(st.integers(-5, 5).map(str), st.booleans().map(lambda b: str(b).lower()),
                        st.just("1.5"), st.just("{ a = 1 }"), st.just("[1, 2]"), st.just('["ok.jsonl", 3]'))
outside = st.sampled_from(["../outside.jsonl", "/etc/passwd", "MANIFEST", "amendments.jsonl", "sub/../../x.jsonl"])
bad_programs = st.one_of(
    st.text(st.characters(min_codepoint=32, max_codepoint=126, exclude_characters='"\\'), max_size=20).filter(
        lambda s: not re.fullmatch(r"[^:]+\.py:[A-Za-z_][A-Za-z0-9_]*", s)),
    st.sampled_from(["../gold.py:score", "/tmp/gold.py:score", "gold.py:", "gold:score", "gold.py:1x", "pkg.mod:f"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_bad_gold_value_is_refused_naming_file_line_and_field(tmp_path_factory, data):
    """Wrong types, paths outside the folder or naming the seal's own files, a program not of the form file.py:function,
    an unknown key: each BadInput names prereg.toml, the line of the key and the key."""
    key, value = data.draw(st.one_of(
        st.tuples(st.just("labels"), toml_values.filter(lambda v: not v.startswith('["ok'))),
        st.tuples(st.just("labels"), outside.map(lambda p: json.dumps([p]))),
        st.tuples(st.just("labels"), st.just('["a.jsonl", "a.jsonl"]')),
        st.tuples(st.just("labels"), st.just('["  "]')),
        st.tuples(st.just("program"), toml_values),
        st.tuples(st.just("program"), bad_programs.map(json.dumps)),
        st.tuples(st.sampled_from(["label", "programme", "seed"]), st.just('"x"')),
    ))
    d = tmp_path_factory.mktemp("reg")
    text = PREREG.replace(GOLD, f"[gold]\n{key} = {value}\n")
    (d / "prereg.toml").write_text(text)
    with pytest.raises(BadInput) as e:
        load_experiment(d)
    assert (e.value.file, e.value.line, e.value.field) == (str(d / "prereg.toml"), line_of(text, f"{key} = "), key), \
        str(e.value)


def test_gold_is_optional_and_both_sources_parse(tmp_path):
    (tmp_path / "prereg.toml").write_text(PREREG.replace(GOLD, ""))
    assert load_experiment(tmp_path).gold is None
    (tmp_path / "prereg.toml").write_text(PREREG.replace(GOLD, GOLD + 'labels = ["gold/a.jsonl", "b.jsonl"]\n'))
    g = load_experiment(tmp_path).gold
    assert (g.value("program"), g.value("labels")) == ("gold.py:score", ("gold/a.jsonl", "b.jsonl"))


@pytest.mark.parametrize("program, source, where, words", [
    ("gold.py:score", None, "prereg", "no file"),
    ("g.py:score", "def score(question, reference, answer):\n    return (\n", "g.py", "cannot be imported"),
    ("g.py:nope", "def score(question, reference, answer):\n    return None\n", "prereg", "nope"),
    ("g.py:score", "raise RuntimeError('boom at import')\n", "prereg", "RuntimeError: boom at import"),
    ("g.py:score", "score = 3\n", "prereg", "not callable"),
    ("g.py:score", "def score(answer):\n    return None\n", "prereg", "(question, reference, answer)"),
])
def test_a_gold_program_that_cannot_be_called_is_bad_input_before_paying(tmp_path, program, source, where, words):
    files = {"g.py": source} if source else {}
    if source is None:
        files = {}
    exp = experiment(tmp_path, f'[gold]\nprogram = "{program}"\n', files)
    if source is None:
        (exp / "gold.py").unlink()
        seal(exp)
    e = load_experiment(exp)
    with pytest.raises(BadInput) as err:
        check_gold(e, load_questions(e.set_paths()), SCALE)
    text = (exp / "prereg.toml").read_text()
    if where == "prereg":
        assert (err.value.file, err.value.line, err.value.field) == (str(exp / "prereg.toml"),
                                                                     line_of(text, "program = "), "program"), err.value
    else:
        assert err.value.file == str(exp / where) and err.value.line == 2, err.value  # the line of the open "("
    assert words in str(err.value)


def test_a_program_edited_after_sealing_is_refused(tmp_path):
    exp = experiment(tmp_path)
    (exp / "gold.py").write_text((exp / "gold.py").read_text() + "\n# edited\n")
    e = load_experiment(exp)
    with pytest.raises(BadInput, match="changed after sealing"):
        check_gold(e, load_questions(e.set_paths()), SCALE)


# ---- the program's scores and errors ------------------------------------------------------------------------

PLANTED = '''
def score(question, reference, answer):
    if answer == "raise":
        raise ValueError("cannot read this")
    if answer.startswith("return "):
        return eval(answer[len("return "):])
    return None
'''


def test_a_program_that_raises_or_leaves_the_scale_gives_that_answer_a_gold_error_naming_program_and_question(
        tmp_path):
    exp = experiment(tmp_path, '[gold]\nprogram = "planted.py:score"\n', {"planted.py": PLANTED})
    texts = {("base", "q01"): "raise", ("trained", "q01"): "return 3", ("base", "q02"): "return True",
             ("trained", "q02"): "return 1.0", ("base", "q03"): "return None", ("trained", "q03"): "return 1",
             ("base", "q05"): "return '2'", ("trained", "q05"): "return 0"}
    g, _ = gold(exp, texts)
    got = {(s.arm, s.question_id): (s.status, s.score) for s in g.scores}
    assert got == {("base", "q01"): ("error", None), ("trained", "q01"): ("error", None),
                   ("base", "q02"): ("error", None), ("trained", "q02"): ("error", None),
                   ("base", "q03"): ("undecided", None), ("trained", "q03"): ("scored", 1),
                   ("base", "q05"): ("error", None), ("trained", "q05"): ("scored", 0)}
    raised = next(s for s in g.errors if s.arm == "base" and s.question_id == "q01")
    assert "planted.py:score" in raised.error and "ValueError: cannot read this" in raised.error
    assert "'q01'" in raised.error and raised.label in raised.error
    off = next(s for s in g.errors if s.arm == "trained" and s.question_id == "q01")
    assert "returned 3" in off.error and "[0, 1, 2]" in off.error
    assert all(s.source == "program" and s.origin == "planted.py:score" for s in g.scores)


# ---- the program runs contained: an exit, a hang or a crash is the program's error, never the harness's ---------

# what a program does on the answer "stop" (it scores every other answer 2), and the words its error must carry
STOPS = {
    "SystemExit": ("raise SystemExit(0)", "exited (SystemExit(0))"),
    "sys.exit": ("sys.exit(0)", "exited (SystemExit(0))"),
    "os._exit": ("os._exit(0)", "ended the process (exit status 0)"),
    "hang": ("while True:\n            pass", "did not finish within its time limit of 1 s"),
    "abort": ("os.abort()", "crashed (SIGABRT"),
    "segfault": ("ctypes.string_at(0)", "crashed (SIGSEGV"),
}


def stopping(how: str, always: bool = False) -> str:
    test = "True" if always else 'answer == "stop"'
    return f"""import ctypes
import os
import sys


def score(question, reference, answer):
    if {test}:
        {STOPS[how][0]}
    return 2
"""


def contained_experiment(tmp_path: Path, source: str, limit: float = 30) -> Path:
    """The demo with gold program `source`, each of its steps limited to `limit` seconds."""
    return experiment(tmp_path, f'[gold]\nprogram = "stops.py:score"\ntimeout_s = {limit}\n', {"stops.py": source})


@pytest.mark.parametrize("how", list(STOPS))
def test_a_program_that_exits_hangs_or_crashes_on_an_answer_errs_there_and_after_naming_it(tmp_path, how):
    """The answer before is scored; the one it stopped on is an error naming the program, what happened, the question
    and the answer's label; the one after is an error naming that answer; this process goes on."""
    exp = contained_experiment(tmp_path, stopping(how), 1 if how == "hang" else 30)
    texts = {("base", "q01"): "fine", ("trained", "q01"): "stop", ("base", "q02"): "fine"}
    g, keys = gold(exp, texts)
    by = {(s.arm, s.question_id): s for s in g.scores}
    assert (by["base", "q01"].status, by["base", "q01"].score) == ("scored", 2)
    stop = by["trained", "q01"]
    assert stop.status == "error" and stop.score is None
    for words in ("stops.py:score", STOPS[how][1], "question 'q01'", stop.label):
        assert words in stop.error, (words, stop.error)
    after = by["base", "q02"]
    assert after.status == "error" and "was not called" in after.error and stop.label in after.error
    assert "question 'q02'" in after.error and g.stopped and stop.label in g.stopped


@pytest.mark.parametrize("how", list(STOPS))
def test_a_program_that_stops_on_a_reference_answer_is_refused_before_paying(tmp_path, how):
    exp = contained_experiment(tmp_path, stopping(how, always=True), 1 if how == "hang" else 30)
    e = load_experiment(exp)
    registered = load_questions(e.set_paths())
    first = next(q for q in registered if q.reference is not None)  # the reference answer scored before paying
    with pytest.raises(BadInput) as err:
        check_gold(e, registered, SCALE)
    text = (exp / "prereg.toml").read_text()
    assert (err.value.file, err.value.line, err.value.field) == (str(exp / "prereg.toml"),
                                                                 line_of(text, "program = "), "program"), err.value
    assert STOPS[how][1] in str(err.value) and f"question {first.id!r}" in str(err.value), err.value


@pytest.mark.parametrize("stop", ["import sys\nsys.exit(0)\n", "import os\nos._exit(0)\n",
                                  "while True:\n    pass\n"])
def test_a_program_that_stops_while_imported_is_bad_input_naming_the_program(tmp_path, stop):
    exp = contained_experiment(tmp_path, stop + "def score(question, reference, answer):\n    return 2\n", 1)
    with pytest.raises(BadInput) as err:
        gold(exp, {("base", "q01"): "fine"})
    assert err.value.field == "program" and "'stops.py:score'" in str(err.value)
    assert "while being imported" in str(err.value), err.value


def test_the_program_scores_a_whole_batch_in_one_child_process(tmp_path, monkeypatch):
    """Contained, and batched: every answer is scored by the same process, which is not this one."""
    pids = tmp_path / "pids"
    monkeypatch.setenv("GOLD_PIDS", str(pids))
    exp = contained_experiment(tmp_path, """import os


def score(question, reference, answer):
    with open(os.environ["GOLD_PIDS"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    return 1
""")
    texts = {(a, q): "x" for a in ARMS for q in ("q01", "q02", "q03")}
    g, _ = gold(exp, texts)
    assert [s.score for s in g.scores] == [1] * 6
    seen = pids.read_text().split()
    assert len(seen) == 6 and len(set(seen)) == 1 and int(seen[0]) != os.getpid()


# ---- designs ------------------------------------------------------------------------------------------------

EVERY = '''
def score(question, reference, answer):
    return {"two": 2, "one": 1, "zero": 0}.get(answer)
'''
ARMS = ("base", "trained")


def test_a_tag_whose_every_answer_has_gold_is_a_complete_stratum_and_one_undecided_answer_breaks_it(tmp_path):
    exp = experiment(tmp_path, '[gold]\nprogram = "every.py:score"\n', {"every.py": EVERY})
    # q03 and q08 are arithmetic (and in_context); q01 only in_context
    texts = {(a, q): "two" for a in ARMS for q in ("q03", "q08")} | {(a, "q01"): "one" for a in ARMS}
    g, _ = gold(exp, texts)
    assert g.complete_strata == ("arithmetic", "in_context")  # every answer of both tags has gold
    texts[("base", "q01")] = "no idea"  # undecided: in_context is no longer whole
    g, _ = gold(exp, texts)
    strata = {s.name: s for s in g.strata}
    ctx = strata["in_context"]
    assert (ctx.answers, ctx.with_gold, ctx.complete) == (6, 5, False)
    assert strata["arithmetic"].complete and strata["arithmetic"].questions == ("q03", "q08")
    designs = {(s.arm, s.question_id): (s.design, s.stratum) for s in g.scores}
    assert designs[("base", "q03")] == ("complete_strata", "arithmetic")
    assert designs[("trained", "q01")] == ("convenience", None)
    assert designs[("base", "q01")] == ("convenience", None)
    texts[("base", "q03")] = "no idea"  # now arithmetic is incomplete too: its decided answers are a convenience set
    g, _ = gold(exp, texts)
    assert g.complete_strata == () and {s.design for s in g.scores} == {"convenience"}


def chained(key: str, entries: list[tuple[str, str, int]]) -> str:
    """A labels file by the chain rule, written out here: (labeller, label, score) per line."""
    out, prev = [], key
    for who, lab, score in entries:
        rec = {"type": "label", "version": 1, "run_key": key, "label": lab, "score": score, "note": "",
               "labeller": who, "time": "2026-12-01T10:00:00+00:00", "prev": prev}
        line = json.dumps(rec, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        out.append(line + "\n")
        prev = hashlib.sha256(line.encode()).hexdigest()
    return "".join(out)


def numpy_draw(pool: list[str], n: int, seed: int) -> list[str]:
    """judge.numbers.stats.ppi.label_sample's documented rule, by numpy directly: n positions of the sorted ids, in id
    order."""
    pool = sorted(pool)
    return [pool[i] for i in sorted(np.random.default_rng(seed).choice(len(pool), size=n, replace=False).tolist())]


def sample_line(picked: list[str], seed: int, population: list[str], n: int | None = None) -> str:
    return json.dumps({"type": "label_sample", "version": 1, "labeller": "bob", "seed": seed,
                       "n": len(picked) if n is None else n, "population": population, "picked": picked,
                       "time": "2026-12-01T09:00:00+00:00"}) + "\n"


POOL = ["q01", "q02", "q03", "q08"]
SEED_Q01 = next(s for s in range(1000) if numpy_draw(POOL, 1, s) == ["q01"])  # a seed that draws q01, found here
SEED_Q02 = next(s for s in range(1000) if numpy_draw(POOL, 1, s) == ["q02"])


def drawn_run(tmp_path: Path, samples: str, labelled: list[tuple[str, str]]):
    """The every.py program on POOL's answers (q01 and q02 undecided: in_context incomplete; trained q08 undecided),
    ann's labels on `labelled` (arm, question), and labels/_samples.jsonl holding `samples`."""
    exp = experiment(tmp_path, '[gold]\nprogram = "every.py:score"\n', {"every.py": EVERY})
    texts = {(a, q): "two" for a in ARMS for q in ("q03", "q08")} | {(a, q): "?" for a in ARMS for q in ("q01", "q02")}
    texts[("trained", "q08")] = "?"
    run = tmp_path / "run"
    (run / "labels").mkdir(parents=True, exist_ok=True)
    _, keys = gold(exp, texts)
    by = {(k.arm, k.question_id): lab for lab, k in keys.items()}
    key = run_key(label_key(load_experiment(exp)))
    (run / "labels" / "ann.jsonl").write_text(chained(key, [("ann", by[x], 2) for x in labelled]))
    (run / "labels" / "_samples.jsonl").write_text(samples)
    g, _ = gold(exp, texts, run)
    return g, exp, key


def test_a_person_completing_an_undecided_stratum_makes_it_complete_and_a_drawn_question_is_a_random_sample(tmp_path):
    g, _, _ = drawn_run(tmp_path, sample_line(["q01"], SEED_Q01, POOL),
                        [("trained", "q08"), ("base", "q01"), ("trained", "q01")])
    assert g.complete_strata == ("arithmetic",)
    got = {(s.arm, s.question_id, s.source): (s.design, s.stratum, s.draw, s.score) for s in g.scores}
    assert got[("trained", "q08", "human")] == ("complete_strata", "arithmetic", None, 2)
    assert got[("base", "q03", "program")] == ("complete_strata", "arithmetic", None, 2)
    assert got[("base", "q01", "human")] == ("random_sample", None, 0, 2)  # q01 was drawn, both answers labelled
    assert got[("trained", "q01", "human")] == ("random_sample", None, 0, 2)
    assert got[("base", "q01", "program")][0] == "convenience"  # the draw makes people's labels random, not code's
    assert g.draws[0].picked == ("q01",) and g.draws[0].seed == SEED_Q01 and g.draws[0].problem is None
    human = next(s for s in g.scores if s.source == "human" and s.question_id == "q01" and s.arm == "base")
    assert (human.origin, human.labeller, human.time) == ("labels/ann.jsonl:2", "ann", "2026-12-01T10:00:00+00:00")


def people_designs(g) -> set[str]:
    return {s.design for s in g.scores if s.source == "human" and s.question_id in ("q01", "q02")}


@pytest.mark.parametrize("sample, words", [
    (sample_line(["q01"], SEED_Q02, POOL), f"seed {SEED_Q02} draws ['q02']"),  # hand-picked: the seed draws q02
    (sample_line(["q01"], SEED_Q01, ["q01"]), "population of 1 questions is not the run's 4"),  # a pool of the picks
    (sample_line(["q01"], SEED_Q01, POOL, n=9), "n 9 with seed"),
    (sample_line(["q01"], -1, POOL), "seed -1 cannot be drawn again"),
], ids=["hand-picked", "population-of-the-picks", "n-too-large", "negative-seed"])
def test_a_draw_the_seed_does_not_make_is_convenience_with_the_reason_and_a_finding_of_verifys_second_path(
        tmp_path, sample, words):
    from judge.verify.second_path.judge_error import drawn_questions

    g, _, _ = drawn_run(tmp_path, sample, [("base", "q01"), ("trained", "q01")])
    assert people_designs(g) == {"convenience"}
    assert g.draws[0].problem.startswith("labels/_samples.jsonl line 1: ") and words in g.draws[0].problem
    assert all(s.draw is None for s in g.scores)
    keys = {s.label: {"label": s.label, "question_id": s.question_id} for s in g.scores}
    drawn, findings = drawn_questions(g, keys, {q: [] for q in POOL})
    assert drawn == set() and len(findings) == 1 and findings[0].startswith("labels/_samples.jsonl line 1: ")


def test_a_draws_problem_is_in_numbers_json_only_when_there_is_one(tmp_path):
    """numbers.json's draws carry `problem` only for a draw that is not a random sample, so a folder written before
    draws were drawn again, whose draws were honest, reads and renders the same."""
    from core.records import GoldSummary
    from judge.numbers.validity import _gold_summary

    bad, _, _ = drawn_run(tmp_path / "a", sample_line(["q01"], SEED_Q02, POOL), [("base", "q01"), ("trained", "q01")])
    good, _, _ = drawn_run(tmp_path / "b", sample_line(["q01"], SEED_Q01, POOL), [("base", "q01"), ("trained", "q01")])
    for g, problem in ((bad, bad.draws[0].problem), (good, None)):
        summary = _gold_summary(g).to_dict()
        (draw,) = summary["draws"]
        assert draw.get("problem") == problem and ("problem" in draw) == (problem is not None)
        assert GoldSummary.read(summary, "numbers.json").to_dict() == summary
    assert bad.draws[0].problem and _gold_summary(bad).designs.random_sample == 0
    assert _gold_summary(good).designs.random_sample == 2


def test_a_draw_labelled_in_part_is_convenience_until_every_answer_of_its_questions_is_labelled(tmp_path):
    from judge.verify.second_path.judge_error import drawn_questions

    sample = sample_line(["q01"], SEED_Q01, POOL)
    g, _, _ = drawn_run(tmp_path / "a", sample, [("base", "q01")])
    assert people_designs(g) == {"convenience"}
    assert "drawn question 'q01' has a person's label on 1 of its 2 answers" in g.draws[0].problem
    keys = {s.label: {"label": s.label, "question_id": s.question_id} for s in g.scores}
    assert drawn_questions(g, keys, {q: [] for q in POOL}) == (set(), [])  # not a finding: labelling is unfinished
    g, _, _ = drawn_run(tmp_path / "b", sample, [("base", "q01"), ("trained", "q01")])
    assert people_designs(g) == {"random_sample"} and g.draws[0].problem is None
    keys = {s.label: {"label": s.label, "question_id": s.question_id} for s in g.scores}
    assert drawn_questions(g, keys, {q: [] for q in POOL}) == ({"q01"}, [])


def test_a_copied_or_renamed_labels_chain_is_refused_naming_both_files(tmp_path):
    _, exp, key = drawn_run(tmp_path, "", [("base", "q01")])
    run = tmp_path / "run"
    texts = {(a, q): "?" for a in ARMS for q in POOL}
    shutil.copy(run / "labels" / "ann.jsonl", run / "labels" / "ann-copy.jsonl")
    with pytest.raises(BadInput) as e:
        gold(exp, texts, run)
    assert (e.value.file, e.value.line, e.value.field) == (str(run / "labels" / "ann-copy.jsonl"), 1, "labeller")
    assert "labels/ann.jsonl (which is there too)" in e.value.message and "labels/ann-copy.jsonl" in e.value.message
    (run / "labels" / "ann.jsonl").unlink()  # renamed, the original gone: still not ann's file
    with pytest.raises(BadInput) as e:
        gold(exp, texts, run)
    assert e.value.field == "labeller" and "labels/ann.jsonl, not labels/ann-copy.jsonl" in e.value.message


@pytest.mark.parametrize("program", ["", 'program = "gold.py:score"\n'])  # a source between the two: still once
def test_a_chain_sealed_as_a_gold_source_and_kept_in_the_run_counts_its_labeller_once_or_is_refused(tmp_path, program):
    exp0 = experiment(tmp_path / "a", sealed=False)
    key = label_key(load_experiment(exp0))
    lab = label_for(label_secret(key), row_id("base", "Q8_0", "q01", 0))
    chain = chained(run_key(key), [("ann", lab, 1)])
    exp = experiment(tmp_path / "b", f'[gold]\n{program}labels = ["gold/ann.jsonl"]\n', {"gold/ann.jsonl": chain})
    run = tmp_path / "run"
    (run / "labels").mkdir(parents=True)
    (run / "labels" / "bob.jsonl").write_text(chained(run_key(key), [("bob", lab, 2)]))
    g, _ = gold(exp, {("base", "q01"): "x"}, run)  # another person on the same answer: two gold scores
    assert sorted((s.source, s.labeller, s.score) for s in g.scores if s.source != "program") == [
        ("human", "bob", 2), ("labels", "ann", 1)]
    (run / "labels" / "ann.jsonl").write_text(chain)
    with pytest.raises(BadInput) as e:
        gold(exp, {("base", "q01"): "x"}, run)
    assert (e.value.file, e.value.line, e.value.field) == (str(run / "labels" / "ann.jsonl"), 1, "label"), e.value
    assert "gold/ann.jsonl:1" in e.value.message


# ---- sealed labels files ------------------------------------------------------------------------------------


def gold_line(**kw) -> str:
    rec = {"type": "gold", "version": 1, "question_id": "q01", "answer_sha256": "0" * 64, "score": 2,
           "labeller": "expert", "time": "2026-11-30T12:00:00+00:00", **kw}
    return json.dumps(rec) + "\n"


def test_a_sealed_file_gives_gold_by_question_and_answer_hash_and_by_blinded_label(tmp_path):
    shown = "A Concession Card holder pays 90 alder crowns."
    sha = hashlib.sha256(shown.encode()).hexdigest()
    exp0 = experiment(tmp_path / "a", '[gold]\nlabels = ["gold/by-hash.jsonl"]\n', {"gold/by-hash.jsonl": ""},
                      sealed=False)
    key = label_key(load_experiment(exp0))
    secret = label_secret(key)
    lab = label_for(secret, row_id("glue-base", "Q4_K_M", "q02", 0))  # a label of the experiment, not in these items
    mine = label_for(secret, row_id("trained", "Q8_0", "q01", 0))
    exp = experiment(tmp_path / "b", '[gold]\nlabels = ["gold/by-hash.jsonl", "runs/labels.jsonl"]\n', {
        "gold/by-hash.jsonl": gold_line(question_id="q03", answer_sha256=sha, score=2)
                              + gold_line(question_id="q03", answer_sha256="1" * 64, score=0),
        "runs/labels.jsonl": chained(run_key(key), [("ann", mine, 1), ("ann", lab, 0)])})
    texts = {("base", "q03"): shown, ("trained", "q03"): shown + " ", ("trained", "q01"): "x"}
    g, _ = gold(exp, texts)
    got = {(s.arm, s.question_id): (s.source, s.origin, s.score, s.labeller) for s in g.scores}
    assert got == {("base", "q03"): ("labels", "gold/by-hash.jsonl:1", 2, "expert"),
                   ("trained", "q01"): ("labels", "runs/labels.jsonl:1", 1, "ann")}
    assert g.unmatched == (("gold/by-hash.jsonl", 1), ("runs/labels.jsonl", 1))


@pytest.mark.parametrize("lines, line, field", [
    ([gold_line(question_id="q99")], 1, "question_id"),
    ([gold_line(), gold_line(answer_sha256="abc")], 2, "answer_sha256"),
    ([gold_line(answer_sha256="A" * 64)], 1, "answer_sha256"),
    ([gold_line(score=3)], 1, "score"),
    ([gold_line(score=True)], 1, "score"),
    ([gold_line(labeller=" ")], 1, "labeller"),
    ([gold_line(time="2026-11-30T12:00:00")], 1, "time"),
    ([gold_line(), gold_line()], 2, "answer_sha256"),
    ([gold_line(), gold_line(type="label")], 2, "type"),
    ([gold_line(), "{not json\n"], 2, None),
])
def test_a_bad_sealed_gold_record_is_refused_before_paying_naming_file_line_and_field(tmp_path, lines, line, field):
    exp = experiment(tmp_path, '[gold]\nlabels = ["g.jsonl"]\n', {"g.jsonl": "".join(lines)})
    e = load_experiment(exp)
    with pytest.raises(BadInput) as err:
        check_gold(e, load_questions(e.set_paths()), SCALE)
    assert (err.value.file, err.value.line, err.value.field) == (str(exp / "g.jsonl"), line, field), err.value


def test_a_sealed_labels_file_naming_a_label_no_run_of_the_experiment_has_is_refused(tmp_path):
    exp0 = experiment(tmp_path / "a", sealed=False)
    key = label_key(load_experiment(exp0))
    good = label_for(label_secret(key), row_id("base", "Q8_0", "q01", 0))
    exp = experiment(tmp_path / "b", '[gold]\nlabels = ["l.jsonl"]\n',
                     {"l.jsonl": chained(run_key(key), [("ann", good, 1), ("ann", "L0123456789ab", 1)])})
    e = load_experiment(exp)
    with pytest.raises(BadInput) as err:
        check_gold(e, load_questions(e.set_paths()), SCALE)
    assert (err.value.line, err.value.field) == (2, "label"), err.value


def test_a_missing_or_unsealed_labels_file_is_refused(tmp_path):
    exp = experiment(tmp_path, '[gold]\nlabels = ["nowhere.jsonl"]\n')
    e = load_experiment(exp)
    with pytest.raises(BadInput) as err:
        check_gold(e, load_questions(e.set_paths()), SCALE)
    assert err.value.field == "labels" and err.value.line == line_of((exp / "prereg.toml").read_text(), "labels =")
    (exp / "nowhere.jsonl").write_text(gold_line())  # present, but not sealed
    with pytest.raises(BadInput, match="MANIFEST"):
        check_gold(e, load_questions(e.set_paths()), SCALE)


# ---- sealed labels files are inputs: read whole, decoded as every input is -----------------------------------

gold_records = st.lists(st.fixed_dictionaries({
    "question_id": st.sampled_from(["q01", "q02", "q03"]), "score": st.sampled_from(SCALE),
    "answer_sha256": st.text("0123456789abcdef", min_size=64, max_size=64),
    "note": st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=30)}),
    min_size=1, max_size=4,
    unique_by=lambda r: (r["question_id"], r["answer_sha256"]))


@pytest.fixture(scope="module")
def sealed_exp(tmp_path_factory) -> Path:
    return experiment(tmp_path_factory.mktemp("sealed"), '[gold]\nlabels = ["g.jsonl"]\n', {"g.jsonl": gold_line()})


def read_sealed_gold(exp_dir: Path, data: bytes):
    from judge.gold.sealed import read_gold_file

    (exp_dir / "g.jsonl").write_bytes(data)
    seal(exp_dir)
    e = load_experiment(exp_dir)
    qs = {q.id: q for q in load_questions(e.set_paths())}
    return read_gold_file(e, "g.jsonl", qs, SCALE, label_key(e))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gold_records, st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_a_sealed_gold_file_reads_every_record_whatever_its_last_line_end_bom_or_line_ends(sealed_exp, recs, bom, crlf,
                                                                                          final_newline, ascii):
    """Every record written is read, the last one with or without its line end; a BOM is dropped; CRLF is a line
    end; text written raw (U+2028, U+0085 ...) stays in its record. (Before: the last record without its newline was
    dropped silently, a BOM refused.)"""
    end = "\r\n" if crlf else "\n"
    base = json.loads(gold_line())
    text = end.join(json.dumps(base | r, ensure_ascii=ascii) for r in recs) + (end if final_newline else "")
    got = read_sealed_gold(sealed_exp, ("\ufeff" if bom else "").encode() + text.encode())
    assert [(no, g.question_id, g.answer_sha256, g.score, g.note) for no, g in got] == \
        [(no, r["question_id"], r["answer_sha256"], r["score"], r["note"]) for no, r in enumerate(recs, start=1)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gold_records, st.data())
def test_a_lone_surrogate_in_a_sealed_gold_record_is_refused_naming_file_line_and_field(sealed_exp, recs, data):
    at = data.draw(st.integers(0, len(recs) - 1), label="record")
    field = data.draw(st.sampled_from(["note", "labeller"]), label="field")
    recs[at][field] = data.draw(st.text(max_size=5), label="before") + chr(data.draw(st.integers(0xD800, 0xDFFF)))
    with pytest.raises(BadInput) as e:
        read_sealed_gold(sealed_exp, "".join(gold_line(**r) for r in recs).encode())
    assert (e.value.file, e.value.line, e.value.field) == (str(sealed_exp / "g.jsonl"), at + 1, field), e.value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
                 gold_records.map(lambda rs: "".join(gold_line(**r) for r in rs).encode()).flatmap(
                     lambda b: st.integers(0, len(b)).map(lambda i: b[:i] + b"\x00\xff{\r"[i % 4:] + b[i:]))))
def test_random_bytes_as_a_sealed_gold_file_are_read_or_bad_input_never_a_traceback(sealed_exp, data):
    try:
        read_sealed_gold(sealed_exp, data)
    except BadInput as e:
        assert e.file == str(sealed_exp / "g.jsonl"), e


def test_check_gold_refuses_a_lone_surrogate_before_anything_is_paid(tmp_path):
    exp = experiment(tmp_path, '[gold]\nlabels = ["g.jsonl"]\n', {"g.jsonl": gold_line() + gold_line(
        question_id="q02", note="fine \ud800")})
    e = load_experiment(exp)
    with pytest.raises(BadInput) as err:
        check_gold(e, load_questions(e.set_paths()), SCALE)
    assert (err.value.file, err.value.line, err.value.field) == (str(exp / "g.jsonl"), 2, "note"), err.value


# ---- what a gold program returns ----------------------------------------------------------------------------


class Unprintable:
    def __repr__(self):
        raise RuntimeError("no repr")


class Unsayable(Exception):
    def __str__(self):
        raise RuntimeError("no str")


returns = st.one_of(st.none(), st.integers(-3, 5), st.integers(10 ** 5000, 10 ** 5000 + 3), st.booleans(),
                    st.floats(allow_nan=True), st.text(max_size=10), st.sampled_from(SCALE).map(float),
                    st.just(Unprintable()), st.lists(st.integers(), max_size=3), st.just(np.int64(1)),
                    st.text(max_size=3).map(lambda t: t + "\udc80"))


@settings(max_examples=150, deadline=None)
@given(returns, st.booleans())
def test_whatever_a_gold_program_returns_or_raises_is_a_status_naming_the_program_and_question_never_a_traceback(
        got, raises):
    """A score on the scale is `scored`; None is `undecided`; anything else (a float, a bool, an int off the scale,
    text, an object that cannot be printed) and anything raised is an `error` naming the program, the question and
    the answer's label, in text that can be written."""
    from arms.contained import Outcome, call_outcome
    from judge.gold.program import _program_outcome
    from registration.questions import Question

    def fn(question, reference, answer):
        if raises:
            raise Unsayable() if isinstance(got, Unprintable) else ValueError(got)
        return got

    q = Question(id="q07", question="?", reference=None, tags=("t",), cluster=None, set="s.jsonl")
    # what the contained child reports of the call (arms.contained), as judge.gold.sources reads it
    status, score, error = _program_outcome(Outcome(*call_outcome(fn, (q, q.reference, "an answer"))), "g.py:score",
                                            q, "L0123456789ab", SCALE)
    if raises:
        want = ("error", None)
    elif got is None:
        want = ("undecided", None)
    elif type(got) is int and got in SCALE:
        want = ("scored", got)
    else:
        want = ("error", None)
    assert (status, score) == want
    if status == "error":
        assert "g.py:score" in error and "'q07'" in error and "L0123456789ab" in error
        error.encode("utf-8")  # no lone surrogate: the error is written to numbers.json and the report
    else:
        assert error is None


# ---- the binding --------------------------------------------------------------------------------------------


def test_a_judged_folder_binds_the_gold_program_source_and_each_labels_file(tmp_path):
    exp = experiment(tmp_path, GOLD + 'labels = ["g.jsonl"]\n', {"g.jsonl": gold_line()})
    e = load_experiment(exp)
    want = {"gold program gold.py:score source sha256": hashlib.sha256((exp / "gold.py").read_bytes()).hexdigest(),
            "gold labels g.jsonl sha256": hashlib.sha256((exp / "g.jsonl").read_bytes()).hexdigest()}
    assert gold_entries(e) == want
    panel = [j for j in e.judges if j.name == "local"]
    bound = registration(e, ["base"], panel, "single", {})
    assert {k: bound[k] for k in want} == want
    assert not set(want) & set(registration(e, ["base"]))  # `arms collect` binds what answers depend on: not gold


def test_verify_names_a_gold_source_changed_after_the_folder_was_bound(tmp_path):
    from judge.results.binding import binding_findings

    exp = experiment(tmp_path, GOLD + 'labels = ["g.jsonl"]\n', {"g.jsonl": gold_line()})
    e = load_experiment(exp)
    run = tmp_path / "run"
    run.mkdir()
    panel = [j for j in e.judges if j.name == "local"]
    doc = {"registration": registration(e, ["base"], panel, "single", {}), "scope": {"arms": ["base"], "limit": None},
           "label_key": label_key(e), "amendments": None}
    (run / "binding.json").write_text(json.dumps(doc))
    assert binding_findings(run, e, registration(e, ["base"], panel, "single", {})) == []
    (exp / "g.jsonl").write_text(gold_line(score=0))
    seal(exp)
    e = load_experiment(exp)
    found = binding_findings(run, e, registration(e, ["base"], panel, "single", {}))
    assert any("gold labels g.jsonl sha256" in f for f in found), found
    assert not any("gold program" in f for f in found)
