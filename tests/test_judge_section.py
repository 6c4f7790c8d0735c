"""The demo's report measures its judge against the demo's programmatic gold and puts a gold-corrected line beside
every decision (the session's small demo run: 3 questions, q01 and q02 in_context only, q03 arithmetic and in_context;
the gold program decides every answer, so their tags are complete strata and every decision has its PPI interval)."""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

from judge.gold.sources import gold_scores
from registration.prereg import load_experiment

from conftest import ROOT

pytestmark = pytest.mark.slow


def test_the_demo_report_has_the_judge_section_with_the_programmatic_gold_per_arm(small_run):
    numbers = json.loads((small_run / "numbers.json").read_text())
    report = (small_run / "report.md").read_text()
    jv = numbers["judge_validity"]
    assert jv["gold"]["program"] == "gold.py:score"
    assert jv["gold"]["complete_strata"] == ["arithmetic", "in_context"]
    # recomputed here from the raw verdicts and the gold reader: judge - gold per arm, over the 24 answers
    gold = gold_scores(load_experiment(ROOT / "sealed" / "demo"), small_run)
    assert {s.question_id for s in gold.scored} == {"q01", "q02", "q03"} and len(gold.scored) == 24  # 4 x 2 x 3
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
    # beside every decision, the gold-corrected line: gold on every paired question (one stratum, in_context: each
    # question's first complete tag), so the PPI++ estimate is the mean gold difference, computed here from the gold
    # scores, and its interval the gold-only one; the line says the judge does not narrow it
    golden: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for s in gold.scored:
        golden[(s.arm, s.quant, s.question_id)].append(s.score)
    mean = {k: sum(v) / len(v) for k, v in golden.items()}
    assert numbers["comparisons"]
    for c in numbers["comparisons"]:
        e, ids = c["judge_error"], c["paired_questions"]
        assert e["design"] == "complete_strata" and e["reason"] == "" and ids
        p = e["ppi"]
        assert p["labelled"] == p["questions"] == len(ids) and [x["id"] for x in p["strata"]] == ["in_context"]
        want = sum(mean[(c["b"], c["quant"], q)] - mean[(c["a"], c["quant"], q)] for q in ids) / len(ids)
        assert p["estimate"] == pytest.approx(want)
        assert (p["low"], p["high"]) == (e["gold_only"]["low"], e["gold_only"]["high"])
        assert (f"PPI++ estimate {p['estimate']:+.3f}, CI [{p['low']:+.3f}, {p['high']:+.3f}], bound {p['low']:+.3f} "
                f"with gold on all {len(ids)} questions (1 stratum): no question is left to the judge") in report
    assert report.count("Gold-corrected (complete strata; judge_error = \"report\"): PPI++ estimate ") == len(
        numbers["comparisons"])
    assert report.count("which the judge's scores do not narrow; judge only ") == len(numbers["comparisons"])
