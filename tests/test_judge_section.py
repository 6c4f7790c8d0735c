"""The demo's report measures its judge against the demo's programmatic gold and puts a gold-corrected line beside
every decision (the session's small demo run: 3 questions, q03 of them arithmetic, which the gold program decides)."""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

from judge.gold import gold_scores
from registration.prereg import load_experiment

from conftest import ROOT

pytestmark = pytest.mark.slow


def test_the_demo_report_has_the_judge_section_with_the_programmatic_gold_per_arm(small_run):
    numbers = json.loads((small_run / "numbers.json").read_text())
    report = (small_run / "report.md").read_text()
    jv = numbers["judge_validity"]
    assert jv["gold"]["program"] == "gold.py:score" and jv["gold"]["complete_strata"] == ["arithmetic"]
    # recomputed here from the raw verdicts and the gold reader: judge - gold per arm, over q03's 8 answers
    gold = gold_scores(load_experiment(ROOT / "sealed" / "demo"), small_run)
    assert {s.question_id for s in gold.scored} == {"q03"} and len(gold.scored) == 8  # 4 arms x 2 quants
    verdicts = {j["label"]: j for j in map(json.loads, (small_run / "judgments.jsonl").read_text().splitlines())}
    off: dict[str, list[int]] = defaultdict(list)
    for s in gold.scored:
        j = verdicts[s.label]
        if j["status"] == "scored":
            off[s.arm].append(j["score"] - s.score)
    (judge,) = jv["judges"]
    per_arm = {p["id"]: p["offset"] for p in judge["agreement"]["per_arm"]}
    assert set(per_arm) == set(off)
    for arm, o in per_arm.items():
        assert o["mean"] == pytest.approx(sum(off[arm]) / len(off[arm]))
    row = "| local | " + " | ".join(f"{o['mean']:+.3f} [{o['low']:+.3f}, {o['high']:+.3f}]" for o in per_arm.values())
    assert "## How good is the judge" in report and row in report
    # beside every decision, the gold-corrected line: none here (q01 and q02 have no gold), and it says why
    for c in numbers["comparisons"]:
        assert c["judge_error"]["ppi"] is None
        assert "outside the complete strata (arithmetic)" in c["judge_error"]["reason"]
    assert report.count("Gold-corrected (complete strata; judge_error = \"report\"): none: the questions outside "
                        "the complete strata (arithmetic)") == len(numbers["comparisons"])
