"""Gold sources are registered by name in one place (judge.gold.registry, declaring registration.gold): a new source is
its definition plus one registration line, and every place that dispatches on sources (the parser, the binding, the
gold set, numbers.json's count by source, the check before paying, the bundle's record) reads it from there.

The toy source below is defined here, registered with one line, and walked end to end on a planted results folder
(tests/data/legacy: no model); every registered source is walked through the same places. Expected values are
planted facts counted by hand."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from arms.folder import gold_entries
from core.errors import BadInput
from core.records import RunInfo
from judge.gold import registry
from judge.gold.registry import Found, GoldSource, Run, register
from judge.gold.scores import GoldScore, GoldSet
from judge.gold.sources import gold_scores, gold_set
from judge.numbers.analysis import compute_numbers
from judge.numbers.validity import _gold_summary
from judge.outputs.report import render
from registration import gold as registration_gold
from registration.gold import GoldSourceSpec, gold_keys
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.seal import inside, seal
from registration.settings import setting

from conftest import ROOT

pytestmark = pytest.mark.unit

LEGACY = ROOT / "tests" / "data" / "legacy"


# ---- a toy source: a sealed text file of "question_id score" lines, each question's score for every answer to it ----


def _read_toy(g: dict, file: Path, exp_dir: Path, where: str) -> str:
    rel = setting(g, "toy", "string", file, where)
    inside(exp_dir, rel, file, "toy")
    return rel


def _toy_scores(run: Run) -> Found:
    rel = run.exp.gold.value("toy") if run.exp.gold else None
    if rel is None:
        return Found([], [])
    by_question = dict(line.split() for line in (run.exp.dir / rel).read_text().splitlines())
    return Found([(i.label, {"origin": f"{rel}:{i.question_id}", "labeller": "toy", "score": int(by_question[q]),
                             "status": "scored", "error": None, "time": None, "note": ""})
                  for i in run.items if (q := i.question_id) in by_question], [])


TOY = GoldSource(GoldSourceSpec("toy", "toy file", key="toy", read=_read_toy,
                                binds=lambda rel: [(f"toy gold {rel} sha256", rel)]), _toy_scores)


@pytest.fixture
def toy():
    """The toy source registered for one test, both registries as they were afterwards."""
    before, declared = dict(registry.SOURCES), dict(registration_gold.GOLD_SOURCES)
    register(TOY)  # the one registration line
    yield TOY
    registry.SOURCES.clear()
    registry.SOURCES.update(before)
    registration_gold.GOLD_SOURCES.clear()
    registration_gold.GOLD_SOURCES.update(declared)


def planted(tmp_path: Path, gold: str, files: dict[str, str]) -> tuple[Path, Path]:
    """The legacy experiment with this [gold] table and these files, sealed again, and a copy of its results folder
    (two arms, three questions, six single answers, judged by "openai")."""
    exp, out = tmp_path / "exp", tmp_path / "out"
    shutil.copytree(LEGACY / "exp", exp)
    shutil.copytree(LEGACY / "out", out)
    (exp / "prereg.toml").write_text((exp / "prereg.toml").read_text() + gold)
    for name, text in files.items():
        (exp / name).write_text(text)
    seal(exp)
    return exp, out


def test_a_toy_source_is_parsed_bound_scored_and_counted_end_to_end(tmp_path, toy):
    exp_dir, out = planted(tmp_path, '\n[gold]\ntoy = "toy.txt"\n', {"toy.txt": "q01 2\nq03 0\n"})
    exp = load_experiment(exp_dir)
    assert exp.gold.value("toy") == "toy.txt" and "toy" in gold_keys()
    sha = hashlib.sha256(b"q01 2\nq03 0\n").hexdigest()
    assert gold_entries(exp) == {"toy gold toy.txt sha256": sha}
    g = gold_scores(exp, out)
    # two arms answered q01 and q03 once each: four toy scores, 2 on q01 and 0 on q03
    assert sorted((s.question_id, s.source, s.score) for s in g.scores) == [
        ("q01", "toy", 2), ("q01", "toy", 2), ("q03", "toy", 0), ("q03", "toy", 0)]
    run = json.loads((out / "run.json").read_text())
    numbers = compute_numbers(exp, load_questions(exp.set_paths()), out, RunInfo.from_dict(run, "run.json"), g)
    assert numbers.judge_validity.gold.sources == {"labels": 0, "program": 0, "human": 0, "toy": 4}
    report = render(numbers, RunInfo.read_file(out / "run.json"), None)
    assert "(4 scores: program 0, sealed labels 0, people 0, toy file 4)" in report


def test_without_its_registration_line_the_toy_key_is_refused_as_unknown(tmp_path):
    exp_dir, _ = planted(tmp_path, '\n[gold]\ntoy = "toy.txt"\n', {"toy.txt": "q01 2\n"})
    with pytest.raises(BadInput) as e:
        load_experiment(exp_dir)
    assert e.value.field == "toy" and "unknown setting in [gold]" in str(e.value)


# ---- every registered source, through every place that dispatches on sources ----------------------------------------


@pytest.mark.parametrize("name", list(registry.SOURCES))
def test_every_registered_source_is_declared_to_the_parser_in_the_same_order(name):
    assert list(registration_gold.GOLD_SOURCES) == list(registry.SOURCES)
    assert registration_gold.GOLD_SOURCES[name] is registry.SOURCES[name].spec


@pytest.mark.parametrize("name", [n for n, s in registry.SOURCES.items() if s.spec.key])
def test_every_registrable_source_is_read_by_its_own_reader(tmp_path, name):
    """A value of the wrong type under its key is refused naming that key by its reader, not as an unknown key."""
    key = registry.SOURCES[name].spec.key
    exp_dir, _ = planted(tmp_path, f"\n[gold]\n{key} = 3\n", {})
    with pytest.raises(BadInput) as e:
        load_experiment(exp_dir)
    assert e.value.field == key and "unknown setting" not in str(e.value)


def score(source: str, label: str = "L1") -> GoldScore:
    return GoldScore(label=label, row="base/served/q01/0", arm="base", quant="served", question_id="q01", sample=0,
                     source=source, origin="x", labeller="x", score=1, status="scored", error=None, time=None,
                     note="", design="convenience", stratum=None, draw=None)


@pytest.mark.parametrize("name", list(registry.SOURCES))
def test_every_registered_source_is_counted_in_numbers_json(name):
    gold = GoldSet(scale=(0, 1, 2), answers=1, scores=(score(name),), strata=(), draws=(), program=None, files=(),
                   unmatched=())
    counts = _gold_summary(gold).sources
    assert list(counts) == list(registry.SOURCES) and counts[name] == 1 and sum(counts.values()) == 1


@pytest.mark.parametrize("name", list(registry.SOURCES))
def test_what_a_bundle_records_of_every_source_reads_back(name):
    """A source that records something of a withheld answer reads its record back; one that records nothing has no
    reader (the bundle refuses a record naming it)."""
    source = registry.SOURCES[name]
    kept = source.publish(score(name), lambda value: value)
    assert (kept is None) == (source.reread is None)
    if kept is not None:
        into: dict = {}
        source.reread({"label": "L1", "source": name, **kept}, Path("gold.jsonl"), 1, into, lambda value: value)
        assert len(into) == 1


@pytest.mark.parametrize("name", list(registry.SOURCES))
def test_every_registered_source_scores_a_run_and_nothing_when_not_registered(tmp_path, name):
    """Each source is asked by the gold set; with nothing registered and no labels of people it gives no score."""
    exp_dir, out = planted(tmp_path, "", {})
    exp = load_experiment(exp_dir)
    assert exp.gold is None and registry.SOURCES[name].scores(
        Run(exp, [], {}, {}, (0, 1, 2), "k", out, None, {})) == Found([], [])
    assert gold_set(exp, [], [], {}, (0, 1, 2), "k", out).scores == ()
