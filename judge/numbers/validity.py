"""How good is the judge: its error against gold, and each decision corrected for it (numbers.json's
``judge_validity`` section and each comparison's ``judge_error`` entry).

Composes judge.numbers.stats.judge_error (agreement, confusion, offsets, the differential offset per hypothesis pair)
and judge.numbers.stats.ppi (the PPI++ estimate of a paired difference) on a run's gold scores
(judge.gold.sources.GoldSet, passed in by the caller: judge.gold.sources reads results folders through
judge.numbers.analysis, so this module takes
the set, never
reads it).

Which gold may correct a decision (registration.vocabulary.GOLD_DESIGNS): a gold score from a complete stratum or
from a seeded random sample; a question's gold is used only when every answer of both arms to it (at the
hypothesis's quant) has such a score. Hand-picked ("convenience") labels measure agreement only, and the
decision line says so.

``[analysis] judge_error``: "report" prints the corrected interval beside the decision, with a caution where its
verdict differs; "decide" makes it the decision's bound (no corrected interval: inconclusive, with the reason) at
every level the family tests the hypothesis at (``decide_by_gold``, called by judge.numbers.analysis before and inside
the family, so the family steps down on the corrected intervals). The corrected interval's calibration is reported
beside it and withdraws nothing.
``[judge] min_gold_agreement``: the lower bound of the primary judge's quadratic-weighted kappa against gold must
reach it, or the decision is inconclusive with the reason.

``earlier``: recompute a folder written before the agreement intervals resampled whole questions and the corrected
interval's guard was anchored to the rubric's range (its numbers.json records neither ``resampling`` nor ``step``):
answers resampled, no exact-agreement interval, a guard of one score point, as that version wrote them.
``interval``: the agreement intervals' method (judge.numbers.stats.judge_error: "bca"); "percentile" recomputes a folder
whose agreement records no ``interval`` (written before the intervals were BCa), which then records none.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import replace
from fractions import Fraction

from core.records import (
    Calibration,
    Comparison,
    CorrectedPower,
    Estimate,
    FamilySection,
    GoldDesigns,
    GoldDraw,
    GoldPair,
    GoldSummary,
    JudgeAgainstGold,
    JudgeError,
    JudgeValidity,
    Judgment,
    KeyRow,
)
from registration.gold import GOLD_SOURCES
from registration.prereg import Experiment, Hypothesis
from registration.questions import Question
from registration.vocabulary import GOLD_DESIGNS

from .bias_checks import apply_family
from .stats import judge_error, ppi, ppi_power
from .stats.calibration import calibrate_ppi
from .stats.decision_rules.interval import claims
from .stats.rule import Scale
from .stats.t_bounds import guard_step

RESAMPLES = 2000  # bootstrap resamples of the agreement intervals (exact agreement, kappa and alpha: the same draws)
ALPHA = 0.025  # the section's intervals are two-sided 95 %
MEASURED_FROM = 10  # random-sample questions with gold from which the power's sd_gold and correlation are measured
EARLIER_STEP = 1.0  # the guard's pseudo-residual before it was anchored to the rubric: one score point


def step_of(gold, earlier: bool = False) -> float:
    """Rule "guarded"'s pseudo-residual: half the rubric's range, as the score rule's guard (stats.t_bounds.guard_step);
    one point for a folder written ``earlier``."""
    return EARLIER_STEP if earlier else guard_step(Scale(min(gold.scale), max(gold.scale)))


def _verdict(kind: str, margin: float, low: float, high: float) -> str:
    """The registered rule on an interval (stats.claims: strict, a bound at the margin does not clear it)."""
    if kind == "non_inferiority":
        if claims("superiority", margin, low, high):
            return "superior"
        return "non-inferior" if claims(kind, margin, low, high) else "not shown"
    if kind == "superiority":
        return "superior" if claims(kind, margin, low, high) else "not shown"
    if claims(kind, margin, low, high):
        return "equivalent"
    return "not equivalent" if low >= margin or high <= -margin else "inconclusive"


def _judge_scores(keys: list[KeyRow], judgments: list[Judgment], judge: str) -> dict[str, int]:
    labels = {k.label for k in keys}
    return {j.label: j.score for j in judgments
            if j.judge == judge and j.kind == "single" and j.status == "scored" and j.label in labels}


def _question_means(values: dict[tuple[str, str, str], list]) -> dict[tuple[str, str, str], Fraction]:
    return {k: Fraction(sum(v), len(v)) for k, v in values.items() if v}


def judge_against_gold(exp: Experiment, gold, keys: list[KeyRow], judgments: list[Judgment], judge: str,
                       hyps: list[Hypothesis], qmap: dict[str, Question], earlier: bool = False,
                       interval: str = "bca") -> JudgeAgainstGold:
    """One judge against every gold score of the answers it scored: agreement, confusion, offsets overall, per arm
    and per hypothesis pair (the differential offset, per question, on questions whose every answer of both arms has
    gold and a verdict)."""
    by_label = {k.label: k for k in keys}
    mine = _judge_scores(keys, judgments, judge)
    rows = [(s, mine[s.label]) for s in gold.scored if s.label in mine]
    designs = GoldDesigns(**{d: sum(s.design == d for s, _ in rows) for d in GOLD_DESIGNS})
    if not rows:
        return JudgeAgainstGold(id=judge, gold_scores=0, designs=designs, agreement=None, pairs=[])
    ag = judge_error.against_gold([j for _, j in rows], [s.score for s, _ in rows], gold.scale,
                                  arms=[s.arm for s, _ in rows], alpha=ALPHA, resamples=RESAMPLES,
                                  seed=exp.analysis.seed, clusters=[s.question_id for s, _ in rows],
                                  resampling="answer" if earlier else "question", interval=interval)
    if earlier:  # as that version wrote it: answers resampled, no exact-agreement interval
        ag = replace(ag, resampling=None, exact_low=None, exact_high=None)
    if ag.interval == "percentile":  # written before the intervals were BCa: no field
        ag = replace(ag, interval=None)
    # per (arm, quant, question): the judge's and the gold's scores of the answers that have both
    judged: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    golden: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for s, _ in rows:
        golden[(s.arm, s.quant, s.question_id)].append(s.score)
    for label, score in mine.items():
        k = by_label[label]
        judged[(k.arm, k.quant, k.question_id)].append(score)
    covered = _covered(keys, {s.label for s, _ in rows} & set(mine))
    jm, gm = _question_means(judged), _question_means(golden)
    pairs = []
    for h in hyps:
        ids = [q.id for q in qmap.values() if all(t in q.tags for t in h.subset)
               and all((arm, h.quant, q.id) in covered for arm in (h.a, h.b))]
        d = judge_error.differential_offset([jm[(h.a, h.quant, q)] for q in ids], [gm[(h.a, h.quant, q)] for q in ids],
                                            [jm[(h.b, h.quant, q)] for q in ids], [gm[(h.b, h.quant, q)] for q in ids],
                                            alpha=ALPHA, resamples=exp.analysis.resamples, seed=exp.analysis.seed)
        pairs.append(GoldPair(id=h.id, a=h.a, b=h.b, quant=h.quant, questions=len(ids), offset_difference=d))
    return JudgeAgainstGold(id=judge, gold_scores=len(rows), designs=designs, agreement=ag, pairs=pairs)


def _covered(keys: list[KeyRow], labels: set[str]) -> set[tuple[str, str, str]]:
    """(arm, quant, question) whose every blinded answer is in ``labels``."""
    cells: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    for k in keys:
        cells[(k.arm, k.quant, k.question_id)].append(k.label in labels)
    return {c for c, v in cells.items() if all(v)}


def _gold_differences(h: Hypothesis, comparison: Comparison, gold, keys: list[KeyRow], scores,
                      qmap: dict[str, Question]) -> tuple[list, list, list, set[str], bool, set[str]]:
    """Per question the decision paired: the judge's difference, the gold's (None where some answer of either arm
    lacks usable gold) and the complete stratum it belongs to; the designs of the gold used, whether hand-picked
    gold sits on these questions, and the complete strata."""
    ids = comparison.paired_questions
    usable = [s for s in gold.scored if s.design != "convenience"]
    values: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for s in usable:
        values[(s.arm, s.quant, s.question_id)].append(s.score)
    covered = _covered(keys, {s.label for s in usable})
    complete = set(gold.complete_strata)
    a, b = scores.get((h.a, h.quant), {}), scores.get((h.b, h.quant), {})
    f, g, strata, designs = [], [], [], set()
    for q in ids:
        f.append(float(b[q] - a[q]))
        if all((arm, h.quant, q) in covered for arm in (h.a, h.b)):
            mb, ma = (Fraction(sum(values[(arm, h.quant, q)]), len(values[(arm, h.quant, q)])) for arm in (h.b, h.a))
            g.append(float(mb - ma))
            designs |= {s.design for s in usable if s.question_id == q and s.quant == h.quant and s.arm in (h.a, h.b)}
        else:
            g.append(None)
        strata.append(next((t for t in qmap[q].tags if t in complete), None))
    hand = any(s.design == "convenience" and s.question_id in set(ids) for s in gold.scored)
    return f, g, strata, designs, hand, complete


def _design(designs: set[str]) -> str:
    return "random_sample" if "random_sample" in designs else "complete_strata"


def correction(h: Hypothesis, comparison: Comparison, gold, keys: list[KeyRow], scores, qmap: dict[str, Question],
               mode: str, alpha: float | None = None, earlier: bool = False) -> JudgeError:
    """The PPI++ estimate of one hypothesis's paired difference beside the judge-only one
    (judge.numbers.stats.ppi.correct), on the questions the decision paired, at one-sided ``alpha`` (None: the level the
    family tested it at);
    ``design`` says whether the gold may correct it."""
    f, g, strata, designs, hand, complete = _gold_differences(h, comparison, gold, keys, scores, qmap)
    base = JudgeError(mode=mode, design=None, ppi=None, gold_only=None, reason="", verdict=None, caution=None)
    if not designs:
        why = ("the only gold on these questions was picked by hand (convenience): agreement only, no correction"
               if hand else "no question of this comparison has gold on every answer of both arms")
        ids = set(comparison.paired_questions)
        why += "".join(f"; {d.problem}" for d in gold.draws if hand and d.problem and ids & set(d.picked))
        return replace(base, design="convenience" if hand else None, reason=why)
    design = _design(designs)
    level = tested_at(h, comparison) if alpha is None else alpha
    c = ppi.correct(f, g, design=design, alpha=level, strata=strata, rule="guarded", step=step_of(gold, earlier))
    reason = c.reason
    if complete and reason.startswith("the questions:"):  # the stratum None is what the complete strata leave
        reason = reason.replace("the questions:", "the questions outside the complete strata "
                                f"({', '.join(sorted(complete))}):", 1)
    out = replace(base, design=design, reason=reason)
    if c.ppi is None:
        return out
    return replace(out, ppi=_estimate(c.ppi, earlier), gold_only=_estimate(c.gold_only, earlier),
                   verdict=_verdict(h.kind, h.margin, c.ppi.low, c.ppi.high))


def decide_by_gold(h: Hypothesis, c: Comparison, gold, keys: list[KeyRow], scores,
                   qmap: dict[str, Question], earlier: bool = False) -> Comparison:
    """``judge_error = "decide"``: comparison c, decided by the judge at its own one-sided level ``c["alpha"]``, gets
    the verdict of the gold-corrected (PPI++) interval computed at that same level; inconclusive, with the reason,
    where there is no corrected interval. A judge-only verdict that is already inconclusive (a guard, or an
    equivalence interval across a margin) stays so. judge.numbers.analysis calls it on each comparison at its registered
    level and on every test the family makes at another level, so the family steps down on the intervals that
    decide."""
    if c.result is None or c.verdict == "inconclusive":
        return c
    e = correction(h, c, gold, keys, scores, qmap, "decide", alpha=c.alpha, earlier=earlier)
    if e.ppi is None:
        return replace(c, verdict="inconclusive",
                       reason=f"judge_error = \"decide\" and no gold-corrected interval: {e.reason}")
    p = e.ppi
    return replace(c, verdict=e.verdict,
                   reason=f"judge_error = \"decide\": the gold-corrected (PPI++) one-sided bound {p.low:+.4f} "
                          f"(estimate {p.estimate:+.4f}, {p.labelled} of {p.questions} questions with gold) decides: "
                          f"{e.verdict}")


def decide_family(method: str, hyps: list[Hypothesis], comparisons: list[Comparison], judge_only_at, gold,
                  keys: list[KeyRow], scores, qmap: dict[str, Question],
                  earlier: bool = False) -> tuple[FamilySection, list[Comparison]]:
    """``judge_error = "decide"``: the registered family (judge.numbers.bias_checks.apply_family) stepping down on the
    gold-corrected intervals, which decide. ``comparisons``: each hypothesis of ``hyps`` decided by the judge at its
    registered level (with the panel's and the guards' verdicts); ``judge_only_at(i, alpha)``: hypothesis i decided
    by the judge at another one-sided level.

    The rule: every test the family makes of hypothesis i at level a, its registered one included, is the
    corrected (PPI++, rule "guarded") interval computed at a, with the registered rule's strict comparison
    (``decide_by_gold``; no corrected interval, or a judge-only verdict already inconclusive: no claim). Holm: while
    some remain unclaimed, each remaining one is tested at its alpha divided by how many remain; those that claim
    leave and the rest are tested again at the larger level; when none claims, it stops. A corrected interval at a
    larger level is nested in the one at a smaller level, so a claim at a level stays one at every larger level and
    this is Holm's step-down on the corrected intervals' p-values (with equal alphas: the smallest first against
    alpha/m, then alpha/(m - 1), ...). Fixed sequence: each in the registered order at its own alpha, by its
    corrected interval, until the first that does not claim. Either way the chance of any false claim is the
    corrected intervals' (BENCHMARKS.md, the family under judge_error = "decide"), never raised by what the judge
    alone would claim."""
    comparisons = [decide_by_gold(h, c, gold, keys, scores, qmap, earlier)
                   for h, c in zip(hyps, comparisons, strict=True)]

    def decided_at(i: int, alpha: float) -> Comparison:
        return decide_by_gold(hyps[i], judge_only_at(i, alpha), gold, keys, scores, qmap, earlier)
    return apply_family(method, comparisons, decided_at)


def ppi_calibration(exp: Experiment, h: Hypothesis, comparison: Comparison, gold, keys: list[KeyRow], scores,
                    qmap: dict[str, Question], earlier: bool = False) -> Calibration:
    """The calibration of the gold-corrected decision (judge.numbers.stats.calibration.calibrate_ppi), for a comparison
    that has a corrected interval, at the level it is tested at; ``interval`` says whose calibration it is. A
    diagnostic: it withdraws no claim."""
    f, g, strata, designs, _, _ = _gold_differences(h, comparison, gold, keys, scores, qmap)
    parts, _ = ppi.split(f, g, design=_design(designs), strata=strata)
    an = exp.analysis
    alpha = tested_at(h, comparison)
    cal = calibrate_ppi(parts, h.kind, h.margin, alpha=alpha, sims=an.calibration_sims, seed=an.seed,
                        ceiling=an.calibration_ceiling if an.calibration_ceiling is not None else 2 * h.alpha,
                        step=step_of(gold, earlier))
    return replace(cal, interval="ppi")


def tested_at(h: Hypothesis, comparison: Comparison) -> float:
    """The one-sided alpha the family of hypotheses last tested this one at (judge.numbers.bias_checks.apply_family),
    else its own: the corrected interval is reported at the level the family's last test of it was made at."""
    return (comparison.family.tested_at if comparison.family else None) or h.alpha


def planning_alpha(exp: Experiment, h: Hypothesis, size: int) -> float:
    """The one-sided level the power of a hypothesis's corrected decision is stated at, fixed before any outcome: under
    Holm its first step's, alpha / k over the k registered hypotheses (the least a claim is tested at); else its own."""
    return h.alpha / size if exp.analysis.family == "holm" else h.alpha


def power_plan(exp: Experiment, h: Hypothesis, judge: list[float], alpha: float, labelled: int | None, step: float,
               gold: list[tuple[float, float]] = ()) -> CorrectedPower:
    """The gold-corrected decision's power (judge.numbers.stats.ppi_power) for a random sample of ``labelled`` of the
    comparison's questions (None: nothing drawn yet), from the judge's paired differences ``judge`` on all of them.

    sd_gold and the correlation of the gold and the judge's differences are measured on ``gold`` ((gold difference,
    judge difference) of the random-sample questions with gold) once MEASURED_FROM of them exist and both vary;
    before, the gold differences are assumed to spread as the judge's do and the correlation is the registered
    ``assumed_gold_correlation``. The figures: the MDE and the power at the margin with ``labelled`` questions, and
    the labelled questions the registered ``target_power`` needs at the margin, with that correlation and at 0 (the
    judge's scores carrying nothing: gold alone)."""
    an = exp.analysis
    n_all = len(judge)
    sd_judge = statistics.stdev(judge)
    basis, rho, sd_gold = "assumed", an.assumed_gold_correlation, sd_judge
    if len(gold) >= MEASURED_FROM:
        g, f = [x for x, _ in gold], [y for _, y in gold]
        if statistics.stdev(g) > 0 and statistics.stdev(f) > 0:
            basis, rho, sd_gold = "measured", min(1.0, max(-1.0, statistics.correlation(g, f))), statistics.stdev(g)

    def design(n: int, r: float) -> ppi_power.Design:
        return ppi_power.Design(questions=n_all, labelled=n, sd_judge=sd_judge, sd_gold=sd_gold, correlation=r,
                                alpha=alpha, step=step)

    planned = labelled is not None and labelled >= 2
    margin = float(h.margin)
    return CorrectedPower(
        basis=basis, correlation=rho, sd_judge=sd_judge, sd_gold=sd_gold,
        gold_questions=len(gold) if basis == "measured" else 0, questions=n_all, labelled=labelled, alpha=alpha,
        step=step, target=an.target_power,
        mde=ppi_power.mde(design(labelled, rho), an.target_power, h.kind) if planned else None,
        power_at_margin=ppi_power.power(design(labelled, rho), margin, h.kind) if planned and margin else None,
        labels_needed=ppi_power.labels_for_power(design(2, rho), margin, an.target_power, h.kind),
        labels_needed_gold_only=ppi_power.labels_for_power(design(2, 0.0), margin, an.target_power, h.kind))


def _planned_power(exp: Experiment, h: Hypothesis, comparison: Comparison, gold, keys: list[KeyRow], scores,
                   qmap: dict[str, Question], size: int) -> CorrectedPower:
    """``power_plan`` of one comparison: its labelled questions are those of the recorded ``--sample`` draws."""
    f, g, strata, designs, _, _ = _gold_differences(h, comparison, gold, keys, scores, qmap)
    ids = comparison.paired_questions
    drawn = {q for d in gold.draws for q in d.picked}
    sampled = designs == {"random_sample"} and not any(strata)  # gold on a random sample only: measurable
    pairs = [(y, x) for x, y in zip(f, g, strict=True) if y is not None] if sampled else []
    return power_plan(exp, h, f, planning_alpha(exp, h, size),
                      len(drawn & set(ids)) if gold.draws else None, step_of(gold), pairs)


def _estimate(e: Estimate, earlier: bool) -> Estimate:
    return replace(e, step=None) if earlier else e  # that version recorded no step


def apply(exp: Experiment, gold, keys: list[KeyRow], judgments: list[Judgment], panel: list[str], primary: str,
          hyps: list[Hypothesis], qmap: dict[str, Question], scores, comparisons: list[Comparison],
          earlier: bool = False, interval: str = "bca") -> tuple[JudgeValidity, list[Comparison]]:
    """The ``judge_validity`` section, and each comparison with its ``judge_error`` entry (at the level the family last
    tested it at; under ``judge_error = "decide"`` its verdict is already the corrected one, ``decide_by_gold``, and
    its calibration line becomes the corrected interval's), its verdict withdrawn where ``min_gold_agreement`` is
    not met; ``earlier``, ``interval``: module doc."""
    judges = [judge_against_gold(exp, gold, keys, judgments, name, hyps, qmap, earlier, interval) for name in panel]
    primary_ag = next(j.agreement for j in judges if j.id == primary)
    mode, floor = exp.analysis.judge_error, exp.min_gold_agreement
    by_id = {h.id: h for h in hyps}
    out = []
    for c in comparisons:
        h = by_id[c.id]
        e = (correction(h, c, gold, keys, scores, qmap, mode, earlier=earlier) if c.result is not None else
             _uncorrected(mode))
        if mode == "decide" and c.result is not None:
            e = replace(e, power=_planned_power(exp, h, c, gold, keys, scores, qmap, len(comparisons)))
        if e.verdict is not None and e.verdict != c.verdict and mode == "report":
            p = e.ppi
            e = replace(e, caution=f"corrected for the judge's error against gold (PPI++, "
                                   f"{e.design.replace('_', ' ')}), the estimate is {p.estimate:+.3f} with one-sided "
                                   f"bound {p.low:+.4f}, which would say \"{e.verdict}\" instead of \"{c.verdict}\": "
                                   "the judge's error may decide this")
        c = replace(c, judge_error=e)
        if mode == "decide" and e.ppi is not None:
            c = replace(c, calibration=ppi_calibration(exp, h, c, gold, keys, scores, qmap, earlier))
        if floor is not None and c.verdict != "inconclusive":
            low = primary_ag.kappa_low if primary_ag else None
            if low is None or low < floor:
                said = "no gold to measure it" if primary_ag is None else (
                    "undefined" if low is None else f"{low:.3f}")
                c = replace(c, verdict="inconclusive",
                            reason=f"the primary judge's agreement with gold (lower bound of the quadratic-weighted "
                                   f"kappa: {said}) is below the registered min_gold_agreement {floor:g}")
        out.append(c)
    return JudgeValidity(gold=_gold_summary(gold), judges=judges, primary=primary, mode=mode,
                         min_gold_agreement=floor), out


def _uncorrected(mode: str) -> JudgeError:
    """A comparison without a judge-only result: nothing to correct. Its keys in the order numbers.json has always
    held them here (verdict and caution before reason, unlike a correction's), so the file stays the same bytes."""
    return JudgeError.read({"mode": mode, "design": None, "ppi": None, "gold_only": None, "verdict": None,
                            "caution": None, "reason": "no judge-only result to correct"}, "numbers.json")


def _gold_summary(gold) -> GoldSummary:
    scored = gold.scored
    return GoldSummary(
        answers=gold.answers, with_gold=len({s.label for s in scored}), scores=len(scored),
        undecided=sum(s.status == "undecided" for s in gold.scores), errors=len(gold.errors),
        sources={src: sum(s.source == src for s in scored) for src in GOLD_SOURCES},
        designs=GoldDesigns(**{d: sum(s.design == d for s in scored) for d in GOLD_DESIGNS}),
        complete_strata=list(gold.complete_strata), program=gold.program,
        draws=[GoldDraw(labeller=d.labeller, seed=d.seed, n=d.n, picked=list(d.picked), problem=d.problem or None)
               for d in gold.draws])
