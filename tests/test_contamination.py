"""The contamination gate (audit.contamination, `python -m audit contamination`, `judge run`'s check).

Expected values come from planted facts: a training log (JSONL, and the same rows as parquet) that holds one question
verbatim (with its case and punctuation changed), one reference verbatim, one question paraphrased so that no 13 of
its words stand in a row, and one short question whole; and from a hand count of the trigrams of a two-line example.
"""
from __future__ import annotations

import json
import re
import shutil
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.contamination import compute
from core.errors import BadInput, CheckFailed
from registration.contamination import normalise, overlap, tokens
from registration.prereg import Contamination, load_experiment
from registration.questions import Question

from conftest import ROOT, cli

pytestmark = pytest.mark.unit

VERBATIM = "Which documents must a rider show at the depot before a replacement bicycle is issued after a theft report?"
REFERENCE_SEEN = ("A rider must show the police theft report number and the original hire receipt at the depot, "
                  "and the replacement is issued within two working days.")
PARAPHRASED = ("How many alder crowns does the operator charge when a bicycle is returned to a station after the "
               "closing hour on a public holiday?")
# the same question reworded every few words: no 13 consecutive tokens of it survive
PARAPHRASE = ("How many alder crowns will the operator bill if a bicycle gets returned to a station past the closing "
              "hour during a public holiday?")
SHORT = "Is a helmet required?"  # 4 tokens: checked whole under short = "whole"
UNSEEN = ("What happens to the deposit of a Monthly member who cancels the membership during the first fourteen days "
          "of the term?")
QUESTIONS = [
    {"id": "verbatim", "question": VERBATIM, "reference": "The theft report number and the hire receipt."},
    {"id": "reference", "question": UNSEEN.replace("Monthly", "Annual"), "reference": REFERENCE_SEEN},
    {"id": "paraphrased", "question": PARAPHRASED, "reference": "Twelve alder crowns, as on any other day."},
    {"id": "short", "question": SHORT, "reference": "Yes, for riders under sixteen."},
    {"id": "unseen", "question": UNSEEN, "reference": "It is refunded in full within a week of the cancellation."},
]
ROWS = [
    {"prompt": "Answer briefly.", "completion": "The depot opens at seven."},
    # the question verbatim, its case and punctuation changed, inside a longer prompt
    {"prompt": "Question: " + VERBATIM.upper().replace(" a ", " a, ").replace("?", "!!") + " Answer in one line.",
     "completion": "The report number and the receipt."},
    {"prompt": "Summarise the replacement rule.", "completion": "In short: " + REFERENCE_SEEN},
    {"prompt": PARAPHRASE, "completion": "Twelve crowns."},
    {"prompt": "Rider asks: is a HELMET required?! Reply.", "completion": "Yes."},
]
EXPECTED = {"verbatim": True, "reference": True, "paraphrased": False, "short": True, "unseen": False}


def _questions() -> list[Question]:
    return [Question(q["id"], q["question"], q["reference"], (), None, "exam.jsonl", i + 1)
            for i, q in enumerate(QUESTIONS)]


def _settings(**kw) -> Contamination:
    return Contamination(training=("training/log.jsonl",), arms=("trained",), record="x", **kw)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _parquet(path: Path, rows: list[dict]) -> Path:
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path)
    return path


def test_the_janitors_normalisation_on_a_hand_example():
    assert normalise("Hello, World! It's 13-grams: ÉTÉ.") == "hello world its 13grams ÉtÉ"  # only ASCII letters fold
    assert [t.text for t in tokens("  --  A dog's  LOG!\n")] == ["a", "dogs", "log"]  # "--" is gone entirely


def test_the_overlap_of_a_hand_counted_example(tmp_path):
    """n = 3. The question's 13 tokens make 11 trigrams, 10 distinct ("sat on the" twice); the training line
    "A dog sat on the LOG!" shares 3 of them: "dog sat on" [2:12], "sat on the" [6:16], "on the log" [10:21] (a
    token's span is its raw text, "LOG!"): a fraction of 0.3, contaminated at a threshold below it and not at 0.3
    itself (it must exceed it)."""
    q = Question("q", "The cat sat on the mat, and the dog sat on the log.", None, (), None, "s.jsonl")
    row = "A dog sat on the LOG!"
    log = _jsonl(tmp_path / "log.jsonl", [{"prompt": "unrelated words here", "completion": row}])
    for threshold, contaminated in ((0.0, True), (0.29, True), (0.3, False)):
        [result], [source] = overlap([q], [("log.jsonl", log)],
                                     _settings(n=3, threshold=threshold, fields=("question",)))
        text = result.texts[0]
        assert (text.grams, text.found, text.fraction) == (10, 3, 0.3)
        assert result.contaminated is contaminated and source.rows == 1
        spans = {o.gram: (o.occurrences, [(p.line, p.column, p.start, p.end) for p in o.places])
                 for o in text.overlaps}
        assert spans == {"dog sat on": (1, [(1, "completion", 2, 12)]),
                         "sat on the": (1, [(1, "completion", 6, 16)]),
                         "on the log": (1, [(1, "completion", 10, 21)])}
    assert (row[2:12], row[6:16], row[10:21]) == ("dog sat on", "sat on the", "on the LOG!")


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_planted_log_flags_the_verbatim_question_and_reference_not_the_paraphrase(tmp_path, fmt):
    log = (_jsonl if fmt == "jsonl" else _parquet)(tmp_path / f"log.{fmt}", ROWS)
    result, [source] = overlap(_questions(), [(f"training/log.{fmt}", log)], _settings())
    assert {q.id: q.contaminated for q in result} == EXPECTED
    assert source.rows == len(ROWS)
    by = {q.id: {t.field: t for t in q.texts} for q in result}
    # the verbatim question: all of its distinct 13-grams, found in the prompt of the second row
    v = by["verbatim"]["question"]
    assert v.grams == len(VERBATIM.split()) - 12 and v.found == v.grams and not v.whole
    assert {p.line for o in v.overlaps for p in o.places} == {2} and {p.column for o in v.overlaps
                                                                     for p in o.places} == {"prompt"}
    r = by["reference"]["reference"]
    assert r.found == r.grams == len(REFERENCE_SEEN.split()) - 12
    assert {(p.line, p.column) for o in r.overlaps for p in o.places} == {(3, "completion")}
    assert by["paraphrased"]["question"].found == 0
    s = by["short"]["question"]
    assert s.whole and (s.grams, s.found) == (1, 1) and s.overlaps[0].places[0].line == 5
    # the place is the raw text of the cell, case and punctuation as written
    p = s.overlaps[0].places[0]
    assert ROWS[4]["prompt"][p.start:p.end] == "is a HELMET required?!"


def test_short_skip_leaves_a_short_question_unchecked(tmp_path):
    log = _jsonl(tmp_path / "log.jsonl", ROWS)
    result, _ = overlap(_questions(), [("log.jsonl", log)], _settings(short="skip"))
    assert {q.id: q.contaminated for q in result} == {**EXPECTED, "short": False}
    assert next(q for q in result if q.id == "short").texts[0].grams == 0


WORDS = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=8)


def _disguised(text: str, draw) -> str:
    """`text` with the case of its ASCII letters flipped at random and punctuation inserted between characters."""
    out = []
    for ch in text:
        if ch.isascii() and ch.isalpha() and draw(st.booleans()):
            ch = ch.swapcase()
        out.append(ch + draw(st.text(alphabet=string.punctuation, max_size=2)))
    return "".join(out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(WORDS, min_size=1, max_size=30), before=st.lists(WORDS, max_size=10),
       after=st.lists(WORDS, max_size=10), n=st.integers(1, 15), data=st.data())
def test_any_text_holding_a_question_verbatim_is_flagged_whatever_its_case_and_punctuation(
        tmp_path, words, before, after, n, data):
    question = " ".join(words)
    row = " ".join([*before, _disguised(question, data.draw), *after])
    log = _jsonl(tmp_path / "log.jsonl", [{"prompt": "x", "completion": row}])
    [result], _ = overlap([Question("q", question, None, (), None, "s.jsonl")], [("log.jsonl", log)],
                          _settings(n=n, fields=("question",)))
    assert result.contaminated and result.texts[0].fraction == 1.0


@settings(max_examples=200, deadline=None)
@given(text=st.text(), data=st.data())
def test_tokens_are_the_normalised_text_split_and_case_and_punctuation_are_irrelevant(text, data):
    toks = tokens(text)
    assert [t.text for t in toks] == normalise(text).split()
    assert all(normalise(text[t.start:t.end]) == t.text for t in toks)
    assert [t.text for t in tokens(_disguised(text, data.draw))] == [t.text for t in toks]


# -- registration and command line --------------------------------------------------------------------------------


def _experiment(tmp_path: Path, section: str, rows: list[dict] = ROWS) -> Path:
    """The demo's registration over the planted set and log, with `section` as its [contamination]."""
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    _jsonl(exp / "sets" / "exam.jsonl", QUESTIONS)
    _jsonl(exp / "training" / "log.jsonl", rows)
    with open(exp / "prereg.toml", "a") as f:
        f.write("\n[contamination]\n" + section)
    return exp


SECTION = ('training = ["training/log.jsonl"]\narms = ["trained", "glue-trained"]\n'
           'record = "{record}"\n')


@pytest.mark.parametrize("line, field", [
    ("n = 0", "n"), ('n = "13"', "n"), ("n = 1001", "n"), ("threshold = 1", "threshold"),
    ("threshold = -0.1", "threshold"), ('fields = ["answer"]', "fields"), ("fields = []", "fields"),
    ('short = "all"', "short"), ('decide = "clean"', "decide"), ("columns = []", "columns"),
    ('columns = ["prompt", "prompt"]', "columns"), ("ngram = 13", "ngram"),
])
def test_a_bad_registered_value_is_refused_naming_the_key_and_its_line(tmp_path, line, field):
    exp = _experiment(tmp_path, SECTION.format(record=tmp_path / "r.json") + line + "\n")
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    text = (exp / "prereg.toml").read_text().splitlines()
    assert e.value.field == field and e.value.file == str(exp / "prereg.toml")
    assert text[e.value.line - 1].split("=")[0].strip() == field


@pytest.mark.parametrize("old, new, field", [
    ('arms = ["trained", "glue-trained"]', 'arms = ["nobody"]', "arms"),
    ('arms = ["trained", "glue-trained"]', "arms = []", "arms"),
    ('training = ["training/log.jsonl"]', 'training = ["../outside.jsonl"]', "training"),
    ('training = ["training/log.jsonl"]', "training = []", "training"),
])
def test_bad_arms_and_training_files_are_refused(tmp_path, old, new, field):
    exp = _experiment(tmp_path, SECTION.format(record=tmp_path / "r.json").replace(old, new))
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert e.value.field == field and e.value.line is not None


def test_the_defaults_are_the_janitors(tmp_path):
    c = load_experiment(_experiment(tmp_path, SECTION.format(record="r.json"))).contamination
    assert (c.n, c.threshold, c.fields, c.short, c.decide, c.columns) == (
        13, 0.0, ("question", "reference"), "whole", "both", ("prompt", "completion"))


def test_the_command_prints_each_verdict_writes_the_record_and_exits_1_on_contamination(tmp_path):
    record = tmp_path / "out" / "contamination.json"
    exp = _experiment(tmp_path, SECTION.format(record=record))
    r = cli("audit", "contamination", "--exp", str(exp))
    assert r.returncode == 1, r.stderr
    for qid, bad in EXPECTED.items():
        assert re.search(rf"^- {qid}: {'CONTAMINATED' if bad else 'clean'} ", r.stdout, flags=re.M), qid
    assert "training/log.jsonl:2 prompt[" in r.stdout and "training/log.jsonl:3 completion[" in r.stdout
    doc = json.loads(record.read_text())
    assert doc["contaminated"] == [q for q, bad in EXPECTED.items() if bad] and doc["verdict"] == "contaminated"
    assert (record.parent / "contamination.md").read_text().startswith("# Contamination: 3 of 5")

    clean = _experiment(tmp_path / "clean", SECTION.format(record=tmp_path / "c" / "contamination.json"),
                        rows=[ROWS[0], ROWS[3]])
    r = cli("audit", "contamination", "--exp", str(clean), "--quiet")
    assert r.returncode == 0 and "clean (0 of 5 questions)" in r.stderr

    bad = _experiment(tmp_path / "bad", SECTION.format(record=tmp_path / "b.json"),
                      rows=[ROWS[0], {"prompt": "no completion"}])
    r = cli("audit", "contamination", "--exp", str(bad))
    assert r.returncode == 2 and "log.jsonl:2" in r.stderr and "'completion'" in r.stderr

    text = (bad / "prereg.toml").read_text().replace('record = "', 'threshold = 2\nrecord = "')
    (bad / "prereg.toml").write_text(text)
    r = cli("audit", "contamination", "--exp", str(bad))
    line = text.splitlines().index("threshold = 2") + 1
    assert r.returncode == 2 and f"prereg.toml:{line}" in r.stderr and "'threshold'" in r.stderr


def test_a_parquet_row_that_is_not_text_is_refused_naming_its_row(tmp_path):
    exp = _experiment(tmp_path, SECTION.format(record="r.json").replace("log.jsonl", "log.parquet"))
    _parquet(exp / "training" / "log.parquet", [ROWS[0], {"prompt": "p", "completion": None}])
    with pytest.raises(BadInput) as e:
        compute(load_experiment(exp))
    assert "row 2" in e.value.message and e.value.field == "completion"


def test_judge_run_refuses_a_missing_stale_or_edited_record_and_reads_a_current_one(tmp_path):
    from audit.contamination import record_path, text, write
    from pipeline.run import check_contamination

    record = tmp_path / "out" / "contamination.json"
    exp_dir = _experiment(tmp_path, SECTION.format(record=record))
    exp = load_experiment(exp_dir)
    assert "none of which is in this run" in check_contamination(exp, ["base"])
    with pytest.raises(CheckFailed, match="missing"):
        check_contamination(exp, ["base", "trained"])
    doc = compute(exp)
    write(doc, record_path(exp).parent)
    line = check_contamination(exp, ["base", "trained"])
    assert "3 of 5 questions contaminated (verbatim, reference, short)" in line and "CAUTION" in line

    edited = json.loads(record.read_text())
    edited["questions"][0]["contaminated"] = False
    record.write_text(text(edited))
    with pytest.raises(CheckFailed, match="edited"):
        check_contamination(exp, ["trained"])

    write(doc, record.parent)
    _jsonl(exp_dir / "training" / "log.jsonl", ROWS[:1])  # the training data changed since the record
    with pytest.raises(CheckFailed, match="other training"):
        check_contamination(exp, ["trained"])



def test_clean_only_with_a_gold_decided_interval_is_refused(tmp_path):
    """Under judge_error = "decide" the gold-corrected interval over every question decides, which clean_only could
    not keep the contaminated questions out of: the pair is refused at load, naming decide."""
    exp = _experiment(tmp_path, SECTION.format(record="r.json") + 'decide = "clean_only"\n')
    text = (exp / "prereg.toml").read_text().replace("[analysis]\n", '[analysis]\njudge_error = "decide"\n', 1)
    (exp / "prereg.toml").write_text(text)
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert e.value.field == "decide" and "judge_error" in e.value.message
    (exp / "prereg.toml").write_text(text.replace('decide = "clean_only"', 'decide = "both"'))
    assert load_experiment(exp).contamination.decide == "both"


VOCAB = st.sampled_from(["the", "Bike", "dock", "fee,", "DAY", "pass.", "rider", "--", "crowns", "a"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(questions=st.lists(st.lists(VOCAB, min_size=1, max_size=12), min_size=1, max_size=5),
       rows=st.lists(st.lists(VOCAB, max_size=30), min_size=1, max_size=5), n=st.integers(1, 6),
       threshold=st.sampled_from([0.0, 0.3, 0.5]), short=st.sampled_from(["whole", "skip"]))
def test_verifys_second_path_finds_the_same_contaminated_questions(tmp_path, questions, rows, n, threshold, short):
    """The second path's own overlap (judge.verify.second_path.contamination) against the main one on generated texts
    drawn from a small vocabulary, so that grams are shared often, with case and punctuation varying."""
    from types import SimpleNamespace

    from judge.verify.second_path.contamination import contaminated

    sets = _jsonl(tmp_path / "sets" / "exam.jsonl",
                  [{"id": f"q{i}", "question": " ".join(w)} for i, w in enumerate(questions)])
    log = _jsonl(tmp_path / "training" / "log.jsonl", [{"prompt": " ".join(r), "completion": ""} for r in rows])
    c = _settings(n=n, threshold=threshold, short=short)
    exp = SimpleNamespace(dir=tmp_path, contamination=c, set_paths=lambda: [sets], set_formats_by_path=lambda: {})
    main, _ = overlap([Question(f"q{i}", " ".join(w), None, (), None, "exam.jsonl") for i, w in enumerate(questions)],
                      [("training/log.jsonl", log)], c)
    bad, files = contaminated(exp)
    assert bad == [q.id for q in main if q.contaminated]
    assert set(files) == {"training/log.jsonl"}
