"""`python -m judge compare` on two real runs: the session's small run of the demo, and one more run of its `base` arm
by the real pipeline (the embedded model, threads = 1, K = 1, the same three questions) whose answers are sampled at
another seed and whose judge (the same embedded model) samples its verdicts, score first, at temperature 1 and a
seed of its own: the demo's greedy judge scores every answer to those questions 0, so two greedy runs would differ in
their answers and not in one score. The paired table is checked against differences computed here from the two
folders' raw files, the questions matched by the sha256 of their text; a real run over a reworded question set is
exit 2 naming the questions."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
from test_compare import by_hand

from registration.seal import seal

from conftest import ROOT, cli

ARM, QUANT = "base", "Q8_0"
SAMPLED = "generation = { temperature = 0.9, top_p = 0.95, max_tokens = 64, seed = 4242, system = " \
          '"Answer the question in one or two sentences." }'
JUDGE_SAMPLING = "generation = { temperature = 1.0, seed = 4242 }"


def demo_variant(folder: Path, questions: dict[str, str] | None = None, sampling_judge: bool = False) -> Path:
    """The demo with arm `base`'s answers sampled at another seed; `questions`: id -> new text; `sampling_judge`: the
    local judge samples (JUDGE_SAMPLING), through the experiment's own correctness rubric with its score first."""
    shutil.copytree(ROOT / "sealed" / "demo", folder)
    prereg = (folder / "prereg.toml").read_text()
    base = re.search(r'(?ms)^name = "base"\n.*?^generation = .*?$', prereg).group(0)
    prereg = prereg.replace(base, re.sub(r"(?m)^generation = .*$", SAMPLED, base))
    if sampling_judge:
        local = '[judges.local]\nmodel = "smollm2-135m"\n'
        assert local in prereg
        prereg = prereg.replace(local, local + JUDGE_SAMPLING + "\n")
        (folder / "rubrics").mkdir()
        shutil.copy(ROOT / "rubrics" / "correctness.j2", folder / "rubrics" / "correctness.j2")
        rubric = (ROOT / "rubrics" / "correctness.toml").read_text()
        rationale = '[schema.properties.rationale]\ntype = "string"\nmaxLength = 60\n\n'
        assert rationale in rubric
        rubric = rubric.replace(rationale, "").replace('required = ["rationale", "score", "harmful"]',
                                                       'required = ["score", "harmful", "rationale"]')
        (folder / "rubrics" / "correctness.toml").write_text(rubric.replace("[generation]", rationale + "[generation]"))
    (folder / "prereg.toml").write_text(prereg)
    if questions:
        path = folder / "sets" / "exam.jsonl"
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        path.write_text("".join(json.dumps({**r, "question": questions.get(r["id"], r["question"])},
                                           ensure_ascii=False) + "\n" for r in rows))
    seal(folder)
    return folder


def run_base(exp: Path, out: Path, limit: int) -> Path:
    r = cli("judge", "run", "--exp", str(exp), "--arms", ARM, "--limit", str(limit), "--out", str(out), "--quiet",
            timeout=900)
    assert r.returncode in (0, 1), r.stderr  # 1: a registered check may fail on a handful of questions; never 2
    assert "Traceback" not in r.stderr
    return out


def by_text(run: Path) -> dict[str, Fraction]:
    """sha256 of the question's text -> the primary judge's mean score of (ARM, QUANT), read from the raw files and
    the run's own question set."""
    info = json.loads((run / "run.json").read_text())
    texts = {}
    for path in sorted(Path(info["experiment_dir"]).glob("sets/*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                q = json.loads(line)
                texts[q["id"]] = hashlib.sha256(q["question"].encode("utf-8")).hexdigest()
    return {texts[qid]: score for qid, score in by_hand(run, ARM, QUANT).items()}


def answers(run: Path) -> dict[str, str]:
    rows = [json.loads(x) for x in (run / "answers.jsonl").read_text().splitlines()]
    return {r["question_id"]: r["text"] for r in rows if (r["arm"], r["quant"]) == (ARM, QUANT)}


@pytest.mark.slow
def test_compare_two_real_runs_prints_the_paired_differences_computed_by_hand(small_run, tmp_path):
    limit = len(json.loads((small_run / "run.json").read_text())["question_ids"])
    other = run_base(demo_variant(tmp_path / "exp", sampling_judge=True), tmp_path / "sampled", limit)
    mine, theirs = answers(small_run), answers(other)
    assert mine.keys() == theirs.keys() and mine != theirs  # two real runs: the sampled answers differ

    a, b = by_text(small_run), by_text(other)
    both = [s for s in a if s in b]
    d = [b[s] - a[s] for s in both]
    assert len(both) == limit and any(d), (a, b)  # the judge scored the runs differently on some question
    up, down = sum(x > 0 for x in d), sum(x < 0 for x in d)

    r = cli("judge", "compare", str(small_run), str(other), "--arm", ARM, "--quant", QUANT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "exploratory" in r.stdout.lower()
    sides = {row[0]: float(row[-1]) for row in (
        [c.strip() for c in line.strip("|").split("|")] for line in r.stdout.splitlines()
        if line.startswith(("| A |", "| B |")))}
    assert sides["A"] == pytest.approx(float(sum(a[s] for s in both) / len(both)), abs=5e-4)
    assert sides["B"] == pytest.approx(float(sum(b[s] for s in both) / len(both)), abs=5e-4)
    head = "| questions | B − A | 95% interval | paired-t 95% | B better | A better | ties | sign p |"
    cells = [c.strip() for c in r.stdout.split(head, 1)[1].splitlines()[2].strip("|").split("|")]
    assert (int(cells[0]), int(cells[4]), int(cells[5]), int(cells[6])) == (len(both), up, down,
                                                                             len(both) - up - down)
    assert float(cells[1]) == pytest.approx(float(sum(d) / len(d)), abs=5e-4)
    low, high = (float(v) for v in cells[2].strip("[]").split(","))
    assert low <= float(cells[1]) <= high

    # B against A: every difference changes sign
    r = cli("judge", "compare", str(other), str(small_run), "--arm", ARM, "--quant", QUANT, timeout=300)
    assert r.returncode == 0, r.stderr
    cells = [c.strip() for c in r.stdout.split(head, 1)[1].splitlines()[2].strip("|").split("|")]
    assert (float(cells[1]), int(cells[4]), int(cells[5])) == (pytest.approx(-float(sum(d) / len(d)), abs=5e-4),
                                                               down, up)


@pytest.mark.slow
def test_compare_with_a_real_run_over_a_reworded_set_is_exit_2_naming_the_questions(small_run, tmp_path):
    ids = json.loads((small_run / "run.json").read_text())["question_ids"]
    reworded, dropped = ids[1], ids[-1]
    exp = demo_variant(tmp_path / "exp", {reworded: "How many alder crowns is an Annual membership, in all?"})
    other = run_base(exp, tmp_path / "reworded", len(ids) - 1)  # the last question not asked at all
    r = cli("judge", "compare", str(small_run), str(other), "--arm", ARM, "--quant", QUANT, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{reworded} (in {small_run}) has other text in {other}" in r.stderr
    assert f"{dropped} (in {small_run}) is not in {other}" in r.stderr
    assert not any(f"{q} (in" in r.stderr for q in ids if q not in (reworded, dropped))
