"""A planted biased judge, end to end: the judge-only decision says "non-inferior" where the truth is inferior, and
gold (a gold program on a whole stratum, a person's labels on a seeded random sample of the rest) shows it.

The arms and the judge are a ScriptedServer on 127.0.0.1 reached through the official openai SDK. Every score is a
planted fact, fixed here and never read from the code under test:

* 40 questions; "computed" (q00-q09) and "open" (q10-q39) are their tags.
* The truth: base's answers are all worth 1; trained's are worth 0 on the 16 questions whose number is 0 or 2 mod 5,
  1 elsewhere. The true paired difference trained - base is therefore -16/40 = -0.4, four times the margin 0.1
  below it: trained IS inferior.
* The judge scores base's answers truly, and trained's one point higher on a seeded 30 of the 40 questions
  (random.Random(7).sample): its difference is -0.4 + 30/40 = +0.35, and the judge-only rule says "non-inferior".
* Gold: the experiment's gold program gives the true score of every answer to a "computed" question (a complete
  stratum); a person ("truth") labels every answer to a seeded random sample of 16 questions drawn by
  `judge label --sample 16 --seed 1` (13 of them "open"), imported as a CSV (design random_sample).
"""
from __future__ import annotations

import csv
import json
import random
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import BadInput
from core.records import RunInfo
from judge.gold.sources import gold_scores
from judge.outputs.export import table
from judge.outputs.report import folder_report
from judge.verify.checks import verify
from registration.prereg import load_experiment
from registration.seal import seal

from conftest import ROOT, cli, http_prereg
from support.scripted_server import ScriptedServer, Seen, Step, reply, verdict

pytestmark = pytest.mark.integration

N = 40
ARMS = {"model-a": "alpha", "model-b": "beta"}
ANSWER = re.compile(r"Reply (alpha|beta) (\d\d)\.")
ITEM = re.compile(r"item (\d\d)")
ENV = {"OPENAI_API_KEY": "sentinel"}
TRUE = {"alpha": [1] * N, "beta": [0 if i % 5 in (0, 2) else 1 for i in range(N)]}
FAVOURED = frozenset(random.Random(7).sample(range(N), 30))  # the questions where the judge adds a point to beta
JUDGED = {"alpha": TRUE["alpha"], "beta": [t + 1 if i in FAVOURED else t for i, t in enumerate(TRUE["beta"])]}
assert sum(TRUE["beta"]) - sum(TRUE["alpha"]) == -16 and sum(JUDGED["beta"]) - sum(JUDGED["alpha"]) == 14
SAMPLE, SAMPLE_SEED = 16, 1

GOLD_PROGRAM = f'''"""The true score of an answer to a "computed" question, read from the answer (a planted fact)."""
import re

TRUE = {TRUE!r}


def score(question, reference, answer):
    if "computed" not in question.tags:
        return None
    arm, item = re.search(r"Reply (alpha|beta) (\\d\\d)\\.", answer).groups()
    return TRUE[arm][int(item)]
'''


def script(seen: Seen) -> Step:
    if seen.model != "judge-model":
        return reply(f"Reply {ARMS[seen.model]} {ITEM.search(seen.prompt).group(1)}.")
    arm, item = ANSWER.search(seen.prompt).groups()
    return verdict({"rationale": "Planted.", "score": JUDGED[arm][int(item)], "harmful": False})


def experiment(root: Path, url: str, analysis: str = "", judge: str = "",
               hypotheses: tuple = (("H1", "base", "trained"),)) -> Path:
    exp = root / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    with open(exp / "sets" / "exam.jsonl", "w") as f:
        for i in range(N):
            f.write(json.dumps({"id": f"q{i:02d}", "question": f"What is item {i:02d}?", "reference": "It is.",
                                "tags": ["computed" if i < 10 else "open"]}) + "\n")
    (exp / "gold.py").write_text(GOLD_PROGRAM)
    models = "".join(f'[models.{m}]\nbackend = "openai"\nsource = "{m}"\nbase_url = "{url}"\nfamily = "scripted"\n\n'
                     for m in ARMS)
    arms = "".join(f'[[arms]]\nname = "{arm}"\nmodel = "{m}"\nquants = ["served"]\n'
                   'generation = { temperature = 0.0, max_tokens = 64, seed = 0 }\n\n'
                   for arm, m in (("base", "model-a"), ("trained", "model-b")))
    text = http_prereg("biased", url, models + arms, list(hypotheses))
    text = text.replace("max_unscored = 0.10\n", f"max_unscored = 0.10\ncalibration_sims = 40\n{analysis}")
    text = text.replace('[judge]\nrubric = "correctness"\n', f'[judge]\nrubric = "correctness"\n{judge}')
    text = text.replace("[[hypotheses]]", '[gold]\nprogram = "gold.py:score"\n\n[[hypotheses]]', 1)
    (exp / "prereg.toml").write_text(text)
    seal(exp)
    return exp


def judged(exp: Path, out: Path):
    return cli("judge", "run", "--exp", str(exp), "--arms", "--out", str(out), "--quiet", env=ENV, timeout=600)


def label_the_sample(out: Path) -> list[str]:
    """Draw the sample as a person would (`judge label --sample`, nothing typed: the draw is recorded, then the
    session stops), and import the true score of every answer to the drawn questions as a CSV."""
    r = cli("judge", "label", str(out), "--labeller", "truth", "--sample", str(SAMPLE), "--seed", str(SAMPLE_SEED))
    assert r.returncode == 130, r.stdout + r.stderr
    (out.parent / "label.out").write_text(r.stdout)  # what the person read before the first answer
    (sample,) = [json.loads(x) for x in (out / "labels" / "_samples.jsonl").read_text().splitlines()]
    keys = [json.loads(x) for x in (out / "blinding.jsonl").read_text().splitlines()]
    rows = [(k["label"], TRUE[ARMS[{"base": "model-a", "trained": "model-b"}[k["arm"]]]][int(k["question_id"][1:])])
            for k in keys if k["question_id"] in sample["picked"]]
    with open(out.parent / "truth.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "score"])
        w.writerows(rows)
    r = cli("judge", "label", str(out), "--import", str(out.parent / "truth.csv"), "--labeller", "truth")
    assert r.returncode == 0, r.stdout + r.stderr
    return sample["picked"]


def biased_run(root: Path, analysis: str = "", judge: str = "", hypotheses: tuple = (("H1", "base", "trained"),)):
    """Judge, label the sample, judge again into the same folder (re-decides with the gold, no model call)."""
    with ScriptedServer(script, models=(*ARMS, "judge-model")) as server:
        exp = experiment(root, server.openai_url, analysis, judge, hypotheses)
        out = root / "out"
        first = judged(exp, out)
        assert first.returncode == 0, first.stderr
        before = json.loads((out / "numbers.json").read_text())
        picked = label_the_sample(out)
        again = judged(exp, out)
        assert again.returncode == 0, again.stderr
    return exp, out, before, picked


@pytest.fixture(scope="module")
def report_mode(tmp_path_factory):
    return biased_run(tmp_path_factory.mktemp("report"))


def test_the_judge_alone_says_non_inferior_and_the_gold_it_is_measured_against_is_the_truth(report_mode):
    exp, out, before, picked = report_mode
    (h1,) = before["comparisons"]
    assert h1["result"]["diff"] == pytest.approx(14 / 40)
    assert h1["verdict"] in ("non-inferior", "superior")  # the judge alone claims non-inferiority (or more)
    # the draw is numpy's (judge.numbers.stats.ppi.label_sample's documented rule), here: 16 of the sorted ids, seed 1
    pool = [f"q{i:02d}" for i in range(N)]
    want = [pool[i] for i in sorted(np.random.default_rng(SAMPLE_SEED).choice(N, size=SAMPLE, replace=False))]
    assert picked == want and sum(q >= "q10" for q in picked) == 13
    g = gold_scores(load_experiment(exp), out)
    keys = {json.loads(x)["label"]: json.loads(x) for x in (out / "blinding.jsonl").read_text().splitlines()}
    for s in g.scored:
        k = keys[s.label]
        arm = "alpha" if k["arm"] == "base" else "beta"
        assert s.score == TRUE[arm][int(k["question_id"][1:])]  # every gold score is the planted truth
        assert s.design == ("complete_strata" if k["question_id"] < "q10" else "random_sample")
    assert g.complete_strata == ("computed",)
    assert {s.question_id for s in g.scored if s.source == "human"} == set(picked)


def _labelled(picked) -> list[int]:
    """The questions whose every answer has gold: the whole "computed" stratum and the drawn sample."""
    return sorted(set(range(10)) | {int(q[1:]) for q in picked})


def test_the_judge_section_measures_the_planted_bias_per_arm_and_per_pair(report_mode):
    exp, out, before, picked = report_mode
    numbers = json.loads((out / "numbers.json").read_text())
    (judge,) = numbers["judge_validity"]["judges"]
    lab = _labelled(picked)
    favoured = sum(i in FAVOURED for i in lab)
    twice = [i for i in range(10) if f"q{i:02d}" in picked]  # gold from the program and from the person
    per_arm = {p["id"]: p["offset"]["mean"] for p in judge["agreement"]["per_arm"]}  # over every gold score
    assert per_arm == {"base": 0, "trained": pytest.approx((favoured + sum(i in FAVOURED for i in twice))
                                                           / (len(lab) + len(twice)))}  # each favoured answer: +1
    (pair,) = judge["pairs"]
    assert pair["questions"] == len(lab) and pair["offset_difference"]["mean"] == pytest.approx(favoured / len(lab))
    assert pair["offset_difference"]["low"] > 0  # the judge moved trained - base up, and the interval says so
    # the confusion matrix, counted from the planted facts (rows gold, columns judge; one row per answer with gold)
    want = [[0] * 3 for _ in range(3)]
    for i in lab:
        for arm in ("alpha", "beta"):
            want[TRUE[arm][i]][JUDGED[arm][i]] += 1
    for i in twice:
        for arm in ("alpha", "beta"):
            want[TRUE[arm][i]][JUDGED[arm][i]] += 1
    assert judge["agreement"]["confusion"] == want


def test_the_ppi_line_contradicts_the_judge_alone_with_a_caution(report_mode):
    exp, out, before, picked = report_mode
    numbers = json.loads((out / "numbers.json").read_text())
    (h1,) = numbers["comparisons"]
    assert h1["verdict"] == before["comparisons"][0]["verdict"] in ("non-inferior", "superior")  # "report": unchanged
    e = h1["judge_error"]
    assert e["design"] == "random_sample" and e["verdict"] == "not shown" and e["caution"]
    # the estimate, from ppi_py on the part gold covers by a random sample, and the planted truth on the whole stratum
    import ppi_py
    rest = list(range(10, N))
    drawn = [i for i in rest if f"q{i:02d}" in picked]
    d = np.array([TRUE["beta"][i] - TRUE["alpha"][i] for i in drawn], dtype=float)
    fl = np.array([JUDGED["beta"][i] - JUDGED["alpha"][i] for i in drawn], dtype=float)
    fu = np.array([JUDGED["beta"][i] - JUDGED["alpha"][i] for i in rest if i not in drawn], dtype=float)
    theta_rest = float(np.asarray(ppi_py.ppi_mean_pointestimate(d, fl, fu, lam=None)).reshape(-1)[0])
    assert e["ppi"]["estimate"] == pytest.approx(0.75 * theta_rest + 0.25 * (-0.4))
    assert e["ppi"]["high"] < -0.1  # the corrected interval lies wholly below -margin, where the truth (-0.4) is
    report = (out / "report.md").read_text()
    assert "## How good is the judge" in report and "**Judge-error caution:**" in report
    assert 'corrected verdict "not shown"' in report


def test_the_export_carries_each_answers_gold(report_mode):
    exp, out, before, picked = report_mode
    df = table(out, exp)
    arm = {"base": "alpha", "trained": "beta"}
    for row in df.itertuples():
        i = int(row.question[1:])
        if i < 10 or row.question in picked:
            assert row.gold == TRUE[arm[row.arm]][i]  # the planted truth, from the program or the person
            assert row.gold_scores == 1 + (i < 10 and row.question in picked)
        else:
            assert row.gold is pd.NA and row.gold_scores == 0


def test_verify_recomputes_the_judge_section_and_names_an_edited_number(report_mode, tmp_path):
    exp, out, before, picked = report_mode
    r = cli("judge", "verify", str(out), "--exp", str(exp), "--no-cache")
    assert r.returncode == 0, r.stdout + r.stderr
    for path, edit in ((("judge_validity", "judges", 0, "agreement", "kappa"), 0.01),
                       (("judge_validity", "judges", 0, "agreement", "kappa_low"), 0.01),
                       (("comparisons", 0, "judge_error", "ppi", "estimate"), 0.01)):
        copy = tmp_path / "_".join(map(str, path))
        shutil.copytree(out, copy)
        numbers = json.loads((copy / "numbers.json").read_text())
        leaf = numbers
        for k in path[:-1]:
            leaf = leaf[k]
        leaf[path[-1]] += edit
        (copy / "numbers.json").write_text(json.dumps(numbers, indent=1) + "\n")
        problems = verify(copy, exp, caches=[]).problems
        named = [p for p in problems if path[-1] in p and p.startswith("numbers.json")]
        # both paths name it: the main path's recomputation and the plain-Python one
        assert any("recomputation from raw files" in p for p in named), problems
        assert any("plain-Python recomputation of the judge's error" in p for p in named), problems


def test_verify_draws_the_sample_again_and_refuses_a_copied_chain(report_mode, tmp_path):
    """Hand-picked picks recorded as the seed's draw are a finding of verify (and the labels on them no longer a
    random sample); the labeller's chain copied beside the original is bad input naming both files, which verify
    reports as the main path refusing the folder (exit 1), and reading the gold refuses (exit 2)."""
    exp, out, before, picked = report_mode
    hand = tmp_path / "hand"
    shutil.copytree(out, hand)
    sample = json.loads((hand / "labels" / "_samples.jsonl").read_text())
    others = [f"q{i:02d}" for i in range(N) if f"q{i:02d}" not in picked]
    sample["picked"] = sorted(picked[1:] + others[:1])  # one pick swapped for a question the seed did not draw
    (hand / "labels" / "_samples.jsonl").write_text(json.dumps(sample) + "\n")
    problems = verify(hand, exp, caches=[]).problems
    assert any(p.startswith("labels/_samples.jsonl line 1: seed 1 draws ") and "picks the seed does not draw" in p
               for p in problems), problems
    assert any("random_sample" in p for p in problems), problems  # the designs numbers.json counted no longer hold

    copied = tmp_path / "copied"
    shutil.copytree(out, copied)
    shutil.copy(copied / "labels" / "truth.jsonl", copied / "labels" / "truth-copy.jsonl")
    r = cli("judge", "verify", str(copied), "--exp", str(exp), "--no-cache")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    said = r.stdout + r.stderr
    assert f"{copied / 'labels' / 'truth-copy.jsonl'}:1: field 'labeller'" in said, said
    assert "labels/truth.jsonl (which is there too)" in said, said
    with pytest.raises(BadInput) as e:
        gold_scores(load_experiment(exp), copied)
    assert (e.value.file, e.value.line, e.value.field) == (str(copied / "labels" / "truth-copy.jsonl"), 1, "labeller")


def _interval_leaves(numbers: dict) -> list[tuple]:
    """Every bootstrap interval end of judge_validity: exact agreement's, kappa's, alpha's, the offsets' overall, per
    arm and per pair."""
    out = []
    for i, j in enumerate(numbers["judge_validity"]["judges"]):
        ag = ("judge_validity", "judges", i, "agreement")
        out += [(*ag, k) for k in ("exact_low", "exact_high", "kappa_low", "kappa_high", "krippendorff_low",
                                   "krippendorff_high")]
        out += [(*ag, "offset", k) for k in ("low", "high")]
        out += [(*ag, "per_arm", a, "offset", k)
                for a in range(len(j["agreement"]["per_arm"])) for k in ("low", "high")]
        out += [("judge_validity", "judges", i, "pairs", p, "offset_difference", k)
                for p in range(len(j["pairs"])) for k in ("low", "high")]
    return out


def _named(numbers: dict, path: tuple) -> str:
    """How verify names a leaf: list entries by their id."""
    out, node = "", numbers
    for k in path:
        node = node[k]
        out += f"[{node['id']}]" if isinstance(k, int) else f".{k}" if out else k
    return out


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.floats(1e-6, 0.5), min_size=14, max_size=14), st.lists(st.booleans(), min_size=14, max_size=14))
def test_verify_names_every_edited_interval_of_the_judges_error_by_its_own_path(report_mode, deltas, signs):
    exp, out, before, picked = report_mode
    numbers = json.loads((out / "numbers.json").read_text())
    leaves = _interval_leaves(numbers)
    assert len(leaves) == 14  # one judge: exact, kappa, alpha, the offset, two arms', one pair's, each two ends
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "out"
        shutil.copytree(out, copy)
        for path, delta, up in zip(leaves, deltas, signs, strict=True):
            leaf = numbers
            for k in path[:-1]:
                leaf = leaf[k]
            leaf[path[-1]] += delta if up else -delta
        (copy / "numbers.json").write_text(json.dumps(numbers, indent=1) + "\n")
        problems = verify(copy, exp, caches=[]).problems
    for path in leaves:
        name = _named(numbers, path)
        assert "judges[openai]" in name
        assert any(p.startswith(f"numbers.json {name} = ") and "plain-Python recomputation of the judge's error" in p
                   for p in problems), (name, problems)


def test_a_folder_whose_agreement_intervals_resampled_answers_verifies_as_written_with_a_note(report_mode, tmp_path):
    """A folder written before records no ``resampling`` (its agreement intervals resampled answers, exact agreement
    had none) and no guard ``step``: verify recomputes it as that version did, by both paths, and lists it as
    unchecked instead of failing; the current folder resamples whole questions."""
    from judge.gold.sources import run_gold
    from judge.numbers.analysis import compute_numbers, write_numbers
    from judge.outputs.report import folder_report
    from registration.questions import load_questions

    exp, out, before, picked = report_mode
    now = json.loads((out / "numbers.json").read_text())["judge_validity"]["judges"][0]["agreement"]
    assert now["resampling"] == "question" and now["exact_low"] <= now["exact"] <= now["exact_high"]
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    e = load_experiment(exp)
    run = json.loads((copy / "run.json").read_text())
    numbers = compute_numbers(e, load_questions(e.set_paths()), copy, RunInfo.from_dict(run, "run.json"),
                              run_gold(e, copy), earlier_intervals=True)
    write_numbers(numbers, copy / "numbers.json")
    (copy / "report.md").write_text(folder_report(copy))
    old = json.loads((copy / "numbers.json").read_text())
    agreement = old["judge_validity"]["judges"][0]["agreement"]
    assert "resampling" not in agreement and "exact_low" not in agreement
    assert "step" not in old["comparisons"][0]["judge_error"]["ppi"]
    assert agreement["kappa_low"] != now["kappa_low"]  # answers resampled: another interval
    found = verify(copy, exp, caches=[])
    assert found.problems == []
    assert any("written by an earlier version, whose agreement intervals resampled answers" in u
               for u in found.unchecked), found.unchecked


def test_a_folder_whose_agreement_intervals_were_percentile_verifies_as_written_with_a_note(report_mode, tmp_path):
    """A folder whose agreements record ``resampling = "question"`` but no ``interval`` had percentile intervals over
    questions: verify recomputes them so by both paths and lists it as unchecked; the current folder records BCa,
    whose kappa interval is another one on the same draws."""
    from judge.gold.sources import run_gold
    from judge.numbers.analysis import compute_numbers, write_numbers
    from judge.outputs.report import folder_report
    from registration.questions import load_questions

    exp, out, before, picked = report_mode
    now = json.loads((out / "numbers.json").read_text())["judge_validity"]["judges"][0]["agreement"]
    assert (now["resampling"], now["interval"]) == ("question", "bca")
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    e = load_experiment(exp)
    run = json.loads((copy / "run.json").read_text())
    numbers = compute_numbers(e, load_questions(e.set_paths()), copy, RunInfo.from_dict(run, "run.json"),
                              run_gold(e, copy), interval="percentile")
    write_numbers(numbers, copy / "numbers.json")
    (copy / "report.md").write_text(folder_report(copy))
    agreement = json.loads((copy / "numbers.json").read_text())["judge_validity"]["judges"][0]["agreement"]
    assert agreement["resampling"] == "question" and "interval" not in agreement
    assert (agreement["kappa_low"], agreement["kappa_high"]) != (now["kappa_low"], now["kappa_high"])
    found = verify(copy, exp, caches=[])
    assert found.problems == []
    assert any("whose agreement intervals were percentile intervals" in u for u in found.unchecked), found.unchecked


@pytest.fixture(scope="module")
def decide_mode(tmp_path_factory):
    """H1 as above; H2 the same pair the other way round (base non-inferior to trained: true, by 0.4, while the
    judge alone sees base 0.35 worse), so the Holm family of the two steps down."""
    return biased_run(tmp_path_factory.mktemp("decide"), analysis='judge_error = "decide"\n',
                      hypotheses=(("H1", "base", "trained"), ("H2", "trained", "base")))


def test_with_judge_error_decide_the_corrected_bound_decides(decide_mode):
    exp, out, before, picked = decide_mode
    h1, _ = json.loads((out / "numbers.json").read_text())["comparisons"]
    # before the person's labels only the "computed" stratum has gold: nothing can correct the judge on the other
    # 30 questions, so the judge's "non-inferior" is withheld
    first = before["comparisons"][0]
    assert first["result"]["diff"] == pytest.approx(14 / 40) and first["verdict"] == "inconclusive"
    assert "no gold-corrected interval" in first["reason"] and "no gold on any of its 30 questions" in first["reason"]
    # with the random sample labelled, the corrected bound decides: the claim is not shown
    assert h1["verdict"] == "not shown" and 'judge_error = "decide"' in h1["reason"]
    assert h1["judge_error"]["caution"] is None


def test_with_judge_error_decide_the_power_the_labels_buy_is_stated_before_and_after_them(decide_mode, tmp_path):
    exp, out, before, picked = decide_mode
    f = [b - a for a, b in zip(JUDGED["alpha"], JUDGED["beta"], strict=True)]  # the judge's planted differences
    first = before["comparisons"][0]["judge_error"]["power"]
    # before any label: nothing drawn; the gold differences assumed to spread as the judge's, at the registered 0.5;
    # planned at Holm's first level, alpha / 2 with two hypotheses registered
    assert (first["basis"], first["labelled"], first["questions"], first["correlation"], first["target"],
            first["alpha"]) == ("assumed", None, N, 0.5, 0.8, 0.0125)
    assert first["sd_judge"] == first["sd_gold"] == pytest.approx(np.std(f, ddof=1), rel=1e-12)
    assert first["mde"] is None and first["power_at_margin"] is None
    # `judge label --sample 16` said it before the first answer: the draw's 16 of the 40 questions
    said = (out.parent / "label.out").read_text()
    assert said.index("Power of the gold-corrected (PPI++) interval, which decides each hypothesis") < \
        said.index("The judge's instructions")
    h1, _ = json.loads((out / "numbers.json").read_text())["comparisons"]
    p = h1["judge_error"]["power"]
    assert p["labelled"] == SAMPLE and p["basis"] == "assumed"  # the gold sits in a complete stratum too: assumed
    line = next(x for x in said.splitlines() if x.startswith("H1 "))
    assert f"with {SAMPLE} of them labelled" in line and f"is {p['mde']:.3f}" in line
    # 80 % power at the margin 0.10 is out of reach on 40 questions: gold on all of them has an SE of about
    # sqrt((39 * 0.736^2 + 2) / (41 * 40)) = 0.119 with the guard, and 0.8 power needs (t + z_0.8) SE = 0.34 > 0.10
    assert p["labels_needed"] is None and p["labels_needed_gold_only"] is None
    assert "80% power at the margin is out of reach: gold on all 40 questions falls short" in line
    report = next(x for x in (out / "report.md").read_text().splitlines() if "Power of the gold-corrected" in x)
    assert report.startswith(f"  Power of the gold-corrected decision (PPI++ on a random sample, `judge label "
                             f"--sample`; one-sided α = 0.0125): with the {SAMPLE} of {N} questions drawn, ")
    # verify recomputes the figures: an edited one is named
    copy = tmp_path / "edited"
    shutil.copytree(out, copy)
    numbers = json.loads((copy / "numbers.json").read_text())
    numbers["comparisons"][0]["judge_error"]["power"]["mde"] += 0.01
    (copy / "numbers.json").write_text(json.dumps(numbers, indent=1) + "\n")
    problems = verify(copy, exp, caches=[]).problems
    assert any(x.startswith("numbers.json comparisons[H1].judge_error.power.mde = ") for x in problems), problems
    # a folder decided before the figures were stated (none in numbers.json, none in its report) still verifies
    old = tmp_path / "old"
    shutil.copytree(out, old)
    numbers = json.loads((old / "numbers.json").read_text())
    del numbers["comparisons"][0]["judge_error"]["power"]
    (old / "numbers.json").write_text(json.dumps(numbers, indent=1) + "\n")
    (old / "report.md").write_text(folder_report(old))
    v = verify(old, exp, caches=[])
    assert v.problems == [] and any("no judge_error.power" in x for x in v.unchecked), (v.problems, v.unchecked)


def test_with_judge_error_decide_the_calibration_line_is_the_corrected_intervals_and_verify_agrees(decide_mode):
    exp, out, before, picked = decide_mode
    h1, _ = json.loads((out / "numbers.json").read_text())["comparisons"]
    cal = h1["calibration"]
    assert cal["interval"] == "ppi" and cal["boundary"] == -0.1 and cal["sims"] == 40
    line = next(x for x in (out / "report.md").read_text().splitlines() if "Calibration" in x)
    assert line.startswith("  Calibration of the gold-corrected (PPI++) interval, which decides: at a true difference "
                           f"of -0.100 this rule claimed \"non-inferiority\" in {cal['claims']} of 40 ")
    assert verify(out, exp, caches=[]).problems == []  # both paths decide by the corrected interval, and agree


def test_with_judge_error_decide_the_family_steps_down_on_the_corrected_intervals_and_verify_agrees(decide_mode):
    """Holm over H1 and H2: at alpha/2 the judge alone claims H1 (its +0.35) and not H2 (its -0.35), but the
    corrected intervals decide: H2's claims at alpha/2 (the truth is +0.4), so H1 is tested again at alpha, where
    its corrected interval still does not claim (the truth is -0.4). verify's second path steps down on its own
    corrected intervals, and the judge's score test does not second-guess a corrected claim at alpha/2."""
    exp, out, before, picked = decide_mode
    h1, h2 = json.loads((out / "numbers.json").read_text())["comparisons"]
    assert (h2["family"]["step"], h2["family"]["tested_at"]) == (1, 0.0125) and h2["verdict"] in ("non-inferior",
                                                                                                  "superior")
    assert h2["result"]["diff"] == pytest.approx(-14 / 40)  # the judge alone: base 0.35 worse, no claim
    assert (h1["family"]["claimed"], h1["family"]["tested_at"], h1["verdict"]) == (False, 0.025, "not shown")
    assert {t["alpha"]: t["claim"] for t in h2["family"]["tests"]} == {0.025: True, 0.0125: True}  # corrected
    assert verify(out, exp, caches=[]).problems == []
