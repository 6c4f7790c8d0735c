"""The summary that opens report.md and review.html (judge.outputs.summary): planted numbers documents, one per kind of
verdict, each with the exact line written out by hand (its figures the planted ones rounded, and the questions a
not-shown decision would need computed here by hand); the report's first section is the summary; a report written
before it still verifies."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.records import Comparison, Numbers, RunInfo
from judge.outputs import summary as lines
from judge.outputs.report import render
from judge.outputs.review import Review
from judge.outputs.summary import Line, deciding, markdown, questions_needed, summary
from judge.outputs.view import render_page, review_data

from support.planted import contract

pytestmark = pytest.mark.unit

LEGACY = Path(__file__).parent / "data" / "legacy" / "out"
TEXT = "trained is not worse than base by more than 0.25"


def comparison(verdict: str, diff: float, bound: float, upper: float, *, kind: str = "non_inferiority",
               margin: float = 0.25, n: int = 40, text: str = TEXT, **more) -> dict:
    """A comparison of numbers.json with only what a reader of the summary reads, the rule's interval planted."""
    return {"id": "H1", "text": text, "a": "base", "b": "trained", "quant": "Q8_0", "kind": kind, "margin": margin,
            "alpha": 0.025, "subset": [], "verdict": verdict, "reason": "planted reason",
            "result": {"n": n, "diff": diff, "bound": bound, "upper": upper, "ci_low": bound, "ci_high": upper,
                       "confidence": 0.95},
            **more}


def decision_line(c: dict) -> Line:
    """The summary's line of the planted comparison, read as numbers.json's reader reads it."""
    return lines.decision_line(contract(Comparison, c))


def judge_line(numbers: dict) -> Line:
    return lines.judge_line(contract(Numbers, numbers))


HEAD = f'H1, "{TEXT}":'
CHANGE = ("Roughly {} questions would be needed to show it (now {}), if the estimate held and the interval narrowed as "
          "1/√n: an approximation, not a power calculation.")


def test_non_inferior():
    assert decision_line(comparison("non-inferior", 0.05, -0.1, 0.2)) == Line(
        f"{HEAD} non-inferior.",
        "By the judge, trained scored 0.050 points higher than base (95% interval of the registered rule, -0.100 to "
        "+0.200, 40 questions): "
        "the interval's lower end, -0.100, is above -0.25, so a loss as large as the margin is ruled out.")


def test_superior_under_non_inferiority():
    assert decision_line(comparison("superior", 0.3, 0.1, 0.5)) == Line(
        f"{HEAD} superior.",
        "By the judge, trained scored 0.300 points higher than base (95% interval of the registered rule, +0.100 to "
        "+0.500, 40 questions): "
        "the interval's lower end, +0.100, is above 0, so trained scores higher.")


def test_not_shown_says_about_how_many_questions_would_show_it():
    # half-width below the estimate 0.175, room to the margin 0.125: 40 * 1.4^2 = 78.4, so 79 questions
    assert decision_line(comparison("not shown", -0.125, -0.3, 0.05)) == Line(
        f"{HEAD} not shown.",
        "By the judge, trained scored 0.125 points lower than base (95% interval of the registered rule, -0.300 to "
        "+0.050, 40 questions): "
        "the interval's lower end, -0.300, reaches -0.25 or below, so a loss as large as the margin is not ruled "
        "out. " + CHANGE.format(79, 40))


def test_not_shown_with_the_estimate_past_the_margin_no_sample_shows_it():
    assert decision_line(comparison("not shown", -0.3, -0.5, -0.1)).text == (
        "By the judge, trained scored 0.300 points lower than base (95% interval of the registered rule, -0.500 to "
        "-0.100, 40 questions): "
        "the interval's lower end, -0.500, reaches -0.25 or below, so a loss as large as the margin is not ruled "
        "out. No sample size would show it: the estimate itself is at or below -0.25.")


def test_superiority_not_shown_without_text_says_the_claim():
    # 0.15 below the estimate, 0.1 above 0: 30 * 1.5^2 = 67.5, so 68
    c = comparison("not shown", 0.1, -0.05, 0.25, kind="superiority", margin=0.0, n=30, text="")
    assert decision_line(c) == Line(
        "H1, trained scores higher than base at Q8_0: not shown.",
        "By the judge, trained scored 0.100 points higher than base (95% interval of the registered rule, -0.050 to "
        "+0.250, 30 questions): "
        "the interval's lower end, -0.050, is at or below 0, so a gain is not shown. " + CHANGE.format(68, 30))
    c = comparison("not shown", -0.1, -0.3, 0.1, kind="superiority", margin=0.0, text="")
    assert decision_line(c).text.endswith(". No sample size would show it: the estimate itself is at or below 0.")


def test_equivalence_each_verdict():
    eq = dict(kind="equivalence", margin=0.2, n=50, text="", subset=["math"])
    head = "H1, trained and base are within 0.2 of each other at Q8_0, on math:"
    assert decision_line(comparison("equivalent", 0.0, -0.1, 0.15, **eq)) == Line(
        f"{head} equivalent.",
        "By the judge, trained and base scored the same on average (95% interval of the registered rule, -0.100 to "
        "+0.150, 50 questions): "
        "it lies wholly inside -0.2 to +0.2.")
    assert decision_line(comparison("not equivalent", 0.45, 0.3, 0.6, **eq)).text.endswith(
        "it lies wholly outside -0.2 to +0.2, so the arms differ by more than the margin.")
    # room: min((0.05 + 0.2) / 0.15, (0.2 - 0.05) / 0.2) = 0.75; 50 / 0.75^2 = 88.9, so 89
    assert decision_line(comparison("inconclusive", 0.05, -0.1, 0.25, **eq)).text == (
        "By the judge, trained scored 0.050 points higher than base (95% interval of the registered rule, -0.100 to "
        "+0.250, 50 questions): "
        "it reaches past -0.2 or +0.2, so neither equivalence nor a difference beyond the margin is shown. "
        + CHANGE.format(89, 50))
    assert decision_line(comparison("inconclusive", 0.25, 0.05, 0.45, **eq)).text.endswith(
        "No sample size would show equivalence: the estimate itself is at or beyond ±0.2.")


def test_untested_under_a_fixed_sequence():
    c = comparison("inconclusive", 0.05, -0.1, 0.2, family={
        "method": "fixed-sequence", "size": 2, "tested_at": None, "claimed": False, "step": 2, "stopped_at": "H0",
        "tests": []})
    assert decision_line(c) == Line(f"{HEAD} not tested.", "The fixed sequence stopped at H0, which made no claim, "
                                    "so this hypothesis was never tested; it is tested only once H0 is shown.")


def test_a_claim_holm_withdrew_at_its_adjusted_level():
    tests = [{"alpha": 0.025, "verdict": "non-inferior", "claim": True},
             {"alpha": 0.025 / 3, "verdict": "not shown", "claim": False}]
    c = comparison("not shown", 0.05, -0.1, 0.2, family={
        "method": "holm", "size": 3, "tested_at": 0.025 / 3, "claimed": False, "step": None, "stopped_at": None,
        "tests": tests})
    assert decision_line(c).text == (
        "By the judge, trained scored 0.050 points higher than base (95% interval of the registered rule, -0.100 to "
        "+0.200, 40 questions); as one of 3 hypotheses (holm) it was tested at one-sided α = 0.0083333, where it is "
        "\"not shown\".")
    # a verdict its own level already gave is not the family's: a guard's, named by its recorded reason
    tests[0]["verdict"] = c["verdict"] = "inconclusive"
    assert decision_line(c).text.endswith("40 questions), but the verdict rests on something else: planted reason.")


def test_a_guard_that_withheld_the_verdict_is_named_by_its_reason():
    c = comparison("inconclusive", 0.05, -0.1, 0.2)
    c["reason"] = "unscored or failed answers (base 30%, trained 0%) exceed the registered 20%"
    assert decision_line(c).text == (
        "By the judge, trained scored 0.050 points higher than base (95% interval of the registered rule, -0.100 to "
        "+0.200, 40 questions), "
        "but the verdict rests on something else: unscored or failed answers (base 30%, trained 0%) exceed the "
        "registered 20%.")
    c.update(result=None, reason="only 1 question(s) scored in both arms")
    assert decision_line(c) == Line(f"{HEAD} inconclusive.",
                                    "No estimate decided it: only 1 question(s) scored in both arms.")


def ppi(estimate: float, low: float, high: float, labelled: int = 20) -> dict:
    return {"estimate": estimate, "low": low, "high": high, "alpha": 0.025, "labelled": labelled, "questions": 40}


def test_a_gold_corrected_decision_says_the_labels_it_needs():
    c = comparison("not shown", -0.05, -0.2, 0.1, judge_error={
        "mode": "decide", "ppi": ppi(-0.125, -0.4, 0.15), "verdict": "not shown",
        "power": {"target": 0.8, "labels_needed": 35, "labelled": 20, "questions": 40}})
    assert decision_line(c) == Line(
        f"{HEAD} not shown.",
        "Corrected against gold (PPI++), trained scored 0.125 points lower than base (95% gold-corrected interval, "
        "-0.400 to "
        "+0.150, 20 questions with gold); the judge alone says -0.050: the interval's lower end, -0.400, reaches "
        "-0.25 or below, so a loss as large as the margin is not ruled out. 80% power at the margin needs 35 of the "
        "40 questions labelled at random (20 now; `judge label --sample`).")
    c["judge_error"]["power"].update(labels_needed=None)
    assert decision_line(c).text.endswith("80% power at the margin is out of reach even with gold on all 40 "
                                          "questions; a judge that agrees better with gold would narrow the interval.")


def test_beside_a_judge_decision_the_gold_corrected_estimate_and_whether_it_agrees():
    c = comparison("non-inferior", 0.05, -0.1, 0.2, judge_error={
        "mode": "report", "ppi": ppi(-0.325, -0.6, -0.05, labelled=40), "verdict": "not shown"})
    assert decision_line(c).text.endswith(
        "so a loss as large as the margin is ruled out. Corrected against gold (40 of 40 questions with gold), the "
        "estimate is -0.325 (95% interval -0.600 to -0.050), whose verdict \"not shown\" would differ.")


def validity(kappa: float | None, low: float | None, high: float | None, mode: str = "report",
             floor: float | None = None) -> dict:
    agreement = {"answers": 24, "exact": 0.5, "kappa": kappa, "kappa_low": low, "kappa_high": high, "alpha": 0.025}
    return {"judge_validity": {"primary": "j", "mode": mode, "min_gold_agreement": floor,
                               "judges": [{"id": "other", "agreement": None}, {"id": "j", "agreement": agreement}]}}


def test_a_judge_barely_above_chance_makes_every_verdict_unreliable():
    assert judge_line(validity(0.04, -0.2, 0.3)) == Line(
        "The judge agrees with gold barely above chance.",
        "Quadratic-weighted κ 0.040, 95% interval -0.200 to 0.300, on 24 answers with gold (exact agreement 0.500): "
        "treat every verdict above that rests on its scores as unreliable, and read the gold-corrected estimates "
        "beside them; label more gold or use a better judge.")
    assert judge_line(validity(0.04, -0.2, 0.3, mode="decide", floor=0.4)).text.endswith(
        "the gold-corrected decisions above rest on the gold labels far more than on the judge; more labels or a "
        "better judge would narrow them. The registered floor for κ's lower bound is 0.4: below it a decision is "
        "inconclusive.")
    assert judge_line(validity(-0.1, -0.4, 0.2)).head == "The judge agrees with gold worse than chance."


def test_a_good_judge_and_an_unmeasured_one():
    assert judge_line(validity(0.85, 0.7, 0.95)).text.endswith(": its verdicts above can be read as they stand.")
    assert judge_line(validity(0.7, 0.3, 0.9)).text.endswith(
        "its verdicts above can be read as they stand, though with 24 answers with gold its κ may be as low as 0.300.")
    assert judge_line(validity(0.5, 0.3, 0.7)).head == "The judge agrees with gold moderately."
    assert judge_line({}).head == "The judge's quality is not measured."
    assert judge_line(validity(None, None, None)).head == "The judge's agreement with gold is undefined."


@given(d=st.floats(-0.9, 0.9), below=st.floats(0.01, 2), n=st.integers(2, 500), margin=st.sampled_from([0.1, 0.25]))
def test_the_questions_needed_are_the_fewest_whose_shrunk_interval_clears_the_margin(d, below, n, margin):
    c = contract(Comparison, comparison("not shown", d, d - below, d + below, n=n, margin=margin))
    need = questions_needed(c, deciding(c))
    if d <= -margin:
        assert need is None
        return
    # the half-width below the estimate, shrunk as 1/sqrt(k) from n questions, clears -margin at `need`, not before
    def clears(k: int) -> bool:
        return d - below * math.sqrt(n / k) > -margin - 1e-12
    assert clears(need) and (need == 1 or not clears(need - 1) or
                             math.isclose(d - below * math.sqrt(n / (need - 1)), -margin, abs_tol=1e-9))


def test_the_report_opens_with_the_summary_and_a_report_written_before_it_still_renders_as_written():
    numbers, run = Numbers.read_file(LEGACY / "numbers.json"), RunInfo.read_file(LEGACY / "run.json")
    from judge.results.files import anchor

    digest = anchor(LEGACY)
    report = render(numbers, run, digest)
    sections = [line for line in report.splitlines() if line.startswith("## ")]
    assert sections[:2] == ["## Summary", "## Decisions (pre-registered)"]
    start = report.index("## Summary\n\n") + len("## Summary\n\n")
    assert report[start:].startswith(markdown(summary(numbers)))
    assert report[start:].startswith("- **H1, trained is not worse than base by more than 0.1 at served: "
                                     "inconclusive.** By the judge, trained scored 0.333 points lower than base")
    assert render(numbers, run, digest, summarised=False) == (LEGACY / "report.md").read_text()


def test_the_review_page_carries_the_same_summary_before_the_decisions():
    numbers, run = Numbers.read_file(LEGACY / "numbers.json"), RunInfo.read_file(LEGACY / "run.json")
    data = review_data(Review(run, numbers, ("served",), (0, 1, 2), ()))
    assert [s["head"] for s in data["summary"]] == [
        "H1, trained is not worse than base by more than 0.1 at served: inconclusive.",
        "The judge's quality is not measured."]
    assert data["summary"] == [{"head": s.head, "text": s.text} for s in summary(numbers)]  # as report.md says
    page = render_page(data, blind=False)
    assert "PAGE.append(...header(), ...summary(), ...decisions()," in page
