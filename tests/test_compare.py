"""`python -m judge compare`: two runs side by side on questions matched by text, and one arm's history.

Expected values are computed here from the raw files (blinding.jsonl and judgments.jsonl read by hand) and from
planted edits; the history's interval is checked against scipy's bootstrap."""
from __future__ import annotations

import json
import re
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from conftest import cli


def by_hand(run: Path, arm: str, quant: str) -> dict[str, Fraction]:
    """question id -> mean of the primary judge's scored verdicts of (arm, quant), from the raw files."""
    primary = json.loads((run / "run.json").read_text())["judge"]["primary"]
    keys = {}
    for line in (run / "blinding.jsonl").read_text().splitlines():
        r = json.loads(line)
        if "arm" in r and r.get("label"):
            keys[r["label"]] = r
    current = {}
    for line in (run / "judgments.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("judge") == primary and r.get("label") in keys:
            current[r["label"]] = r  # the last record of a key is its current one
    out: dict[str, list[int]] = {}
    for label, r in current.items():
        k = keys[label]
        if (k["arm"], k["quant"]) == (arm, quant) and r["status"] == "scored":
            out.setdefault(k["question_id"], []).append(r["score"])
    return {q: Fraction(sum(v), len(v)) for q, v in out.items()}


def _plant_top_scores(run: Path, arm: str, quant: str, question: str) -> None:
    """Every verdict of (arm, quant) on one question becomes the rubric's top score, 2."""
    keys = {json.loads(x)["label"]: json.loads(x) for x in (run / "blinding.jsonl").read_text().splitlines()
            if "arm" in json.loads(x)}
    lines = []
    for line in (run / "judgments.jsonl").read_text().splitlines():
        r = json.loads(line)
        k = keys.get(r.get("label"))
        if k and (k["arm"], k["quant"], k["question_id"]) == (arm, quant, question):
            r.update(status="scored", score=2)
        lines.append(json.dumps(r))
    (run / "judgments.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.slow
def test_two_runs_side_by_side_give_the_paired_difference_computed_by_hand(small_run, tmp_path):
    run = json.loads((small_run / "run.json").read_text())
    arm, quant = run["arms"][0], "Q8_0"
    other = tmp_path / "later"
    shutil.copytree(small_run, other)
    a = by_hand(small_run, arm, quant)
    q = sorted(a)[0]
    _plant_top_scores(other, arm, quant, q)
    b = by_hand(other, arm, quant)
    both = [x for x in a if x in b]
    want = float(sum(b[x] - a[x] for x in both) / len(both))
    up, down = sum(b[x] > a[x] for x in both), sum(b[x] < a[x] for x in both)

    r = cli("judge", "compare", str(small_run), str(other), "--arm", arm, "--quant", quant,
            "--out", str(tmp_path / "cmp.md"))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "cmp.md").read_text()
    assert r.stdout == text and "exploratory" in text.lower()
    head = "| questions | B − A | 95% interval | paired-t 95% | B better | A better | ties | sign p |"
    cells = [c.strip() for c in text.split(head, 1)[1].splitlines()[2].strip("|").split("|")]
    n, diff = int(cells[0]), float(cells[1])
    low, high = (float(v) for v in cells[2].strip("[]").split(","))
    assert (n, int(cells[4]), int(cells[5]), int(cells[6])) == (len(both), up, down, len(both) - up - down)
    assert diff == pytest.approx(want, abs=5e-4) and low <= diff <= high

    # the same run against itself: no difference at all
    r = cli("judge", "compare", str(small_run), str(small_run), "--arm", arm, "--quant", quant)
    assert r.returncode == 0, r.stderr
    assert f"| {len(a)} | +0.000 | [+0.000, +0.000] |" in r.stdout


@pytest.mark.slow
def test_a_question_reworded_between_runs_is_named_and_exit_2(small_run, tmp_path):
    run = json.loads((small_run / "run.json").read_text())
    exp = tmp_path / "exp"
    shutil.copytree(run["experiment_dir"], exp)
    first = run["question_ids"][0]
    for path in sorted(exp.glob("sets/*.jsonl")):
        lines = path.read_text().splitlines()
        changed = [json.dumps({**json.loads(x), "question": json.loads(x)["question"] + " (reworded)"})
                   if x.strip() and json.loads(x).get("id") == first else x for x in lines]
        if changed != lines:
            path.write_text("\n".join(changed) + "\n")
    assert cli("judge", "seal", str(exp)).returncode == 0
    other = tmp_path / "later"
    shutil.copytree(small_run, other)
    (other / "run.json").write_text(json.dumps({**run, "experiment_dir": str(exp)}))
    r = cli("judge", "compare", str(small_run), str(other))
    assert r.returncode == 2
    assert f"{first} (in {small_run}) has other text in {other}" in r.stderr
    assert not any(f"{q} (in" in r.stderr for q in run["question_ids"][1:])


@pytest.mark.slow
def test_the_history_table_and_plot_hold_each_runs_mean_and_a_bootstrap_interval(small_run, tmp_path):
    run = json.loads((small_run / "run.json").read_text())
    arm, quant = run["arms"][0], "Q8_0"
    other = tmp_path / "later"
    shutil.copytree(small_run, other)
    _plant_top_scores(other, arm, quant, sorted(by_hand(small_run, arm, quant))[0])
    png = tmp_path / "history.png"
    r = cli("judge", "compare", "--history", str(small_run), str(other), "--arm", arm, "--quant", quant,
            "--plot", str(png))
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = re.findall(r"^\| (\d) \| .* \| (\d+) \| ([\d.]+) \| \[([\d.]+), ([\d.]+)\] \|$", r.stdout, re.M)
    assert [int(x[0]) for x in rows] == [1, 2]
    for (_, n, mean, low, high), folder in zip(rows, (small_run, other), strict=True):
        x = np.array([float(v) for v in by_hand(folder, arm, quant).values()])
        assert int(n) == x.size and float(mean) == pytest.approx(x.mean(), abs=5e-4)
        peer = stats.bootstrap((x,), np.mean, method="percentile", confidence_level=0.95, n_resamples=10000,
                               random_state=np.random.default_rng(0)).confidence_interval
        assert float(low) == pytest.approx(peer.low, abs=0.05) and float(high) == pytest.approx(peer.high, abs=0.05)


@pytest.mark.integration
def test_compare_needs_two_runs_and_results_folders(tmp_path):
    r = cli("judge", "compare", str(tmp_path))
    assert r.returncode == 2 and "RUN_A RUN_B" in r.stderr
    r = cli("judge", "compare", str(tmp_path), str(tmp_path))
    assert r.returncode == 2 and "run.json" in r.stderr and "not a results folder" in r.stderr
