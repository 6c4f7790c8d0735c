"""`judge verify`'s second path through the judge's error (numbers.json's ``judge_validity`` and each comparison's
``judge_error``): plain loops over the raw verdicts and the run's gold scores, sharing no statistics with the main
path (judge.numbers.validity, judge.numbers.stats).

Recomputed: per judge the gold scores compared, exact agreement, quadratic-weighted kappa, Krippendorff's ordinal
alpha, the confusion matrix, the mean offset judge - gold overall and per arm, and per hypothesis the questions
and mean of the differential offset; per comparison the design, the PPI++ estimate (rule "guarded"), its standard
error, interval and tuned lambda per stratum, the gold-only estimate and the corrected verdict. The gold scores
themselves are read by judge.gold.sources, the one reader of gold (the program is run from its sealed source); whether a
person's label is a random sample is decided here again (``drawn_questions``): each recorded draw drawn again from its
population, n and seed by this path's own call of numpy, and its questions labelled on every answer.

The agreement and offsets with their bootstrap intervals are gold_agreement's; the guarded PPI++ interval is ppi's.

Under ``[analysis] judge_error = "decide"`` a gold-corrected interval decides: ``corrected_verdicts`` gives its
verdict at any level, on which verify's family (judge.verify.second_path.biases) steps down in place of the judge-only
one; ``decide`` then adds its calibration (``calibration``, a diagnostic that withdraws nothing), simulated by this
path's own loop on the draws the main path documents (judge.numbers.stats.calibration.calibrate_ppi), and checks
``min_gold_agreement`` against this path's own kappa interval.
"""
from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from typing import Any

import numpy as np

from registration.vocabulary import CLAIMS, boundary

from . import agreement
from .decision_rules.interval import verdict_between
from .gold_agreement import ALPHA, RESAMPLES, agreement_intervals, alpha_ordinal, offset
from .ppi import guarded, step_of


def recompute(run: dict, exp, gold, keys: dict[str, dict], verdicts: list[dict],
              questions: dict[str, list[str]], alphas: dict[str, float], earlier: bool = False,
              interval: str = "bca") -> dict[str, Any]:
    """The recomputed fields, shaped as numbers.json holds them (for verify's diff). `keys`: blinding.jsonl's
    records by label; `verdicts`: each verdict's current record; `questions`: the run's question ids -> tags;
    `alphas`: the level the family tests each hypothesis at (verify recomputes the family by its own path);
    `earlier`: a folder written before questions were resampled and the guard was half the range (module doc);
    `interval`: "percentile" for a folder whose agreement records no ``interval`` (module doc)."""
    scored = [s for s in gold.scores if s.status == "scored"]
    hyps = [h for h in exp.hypotheses if h.a in run["arms"] and h.b in run["arms"]]
    scale = list(gold.scale)
    seed, pair_resamples = exp.analysis.seed, exp.analysis.resamples
    judges = []
    by_cell: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for k in keys.values():
        by_cell[(k["arm"], k["quant"], k["question_id"])].append(k["label"])
    for name in run["judge"].get("panel", [run["judge"]["primary"]]):
        mine = {j["label"]: j["score"] for j in verdicts if j["judge"] == name and j.get("status") == "scored"
                and j["label"] in keys and (j.get("kind") or "single") == "single"}
        rows = [(s, mine[s.label]) for s in scored if s.label in mine]
        entry: dict[str, Any] = {"id": name, "gold_scores": len(rows)}
        if rows:
            g, j = [s.score for s, _ in rows], [x for _, x in rows]
            confusion = [[sum(1 for x, y in zip(g, j, strict=True) if (x, y) == (a, b)) for b in scale] for a in scale]
            per_arm = []
            for arm in sorted({s.arm for s, _ in rows}):
                mine_arm = [(s, x) for s, x in rows if s.arm == arm]
                per_arm.append({"id": arm, "offset": offset([x for _, x in mine_arm], [s.score for s, _ in mine_arm],
                                                            resamples=RESAMPLES, seed=seed,
                                                            clusters=[s.question_id for s, _ in mine_arm])})
            exact = sum(x == y for x, y in zip(g, j, strict=True)) / len(g)
            entry["agreement"] = {"answers": len(rows), "exact": exact, "kappa": agreement.kappa_quadratic(g, j, scale),
                                  "krippendorff_alpha": alpha_ordinal(g, j), "confusion": confusion,
                                  **agreement_intervals(g, j, scale, seed, questions=None if earlier else
                                                        [s.question_id for s, _ in rows], bca=interval == "bca"),
                                  "offset": offset(j, g, resamples=RESAMPLES, seed=seed,
                                                   clusters=[s.question_id for s, _ in rows]),
                                  "per_arm": per_arm, "alpha": ALPHA, "resamples": RESAMPLES, "seed": seed}
            golden: dict[tuple, list[int]] = defaultdict(list)
            for s, _ in rows:
                golden[(s.arm, s.quant, s.question_id)].append(s.score)
            have = {s.label for s, _ in rows}
            pairs = [_pair(h, mine, golden, have, by_cell, questions, pair_resamples, seed) for h in hyps]
            entry["pairs"] = pairs
        judges.append(entry)
    comparisons = [{"id": h.id, "judge_error": _correction(h, run, gold, scored, keys, by_cell, verdicts, questions,
                                                                alphas.get(h.id) or h.alpha, earlier)}
                   for h in hyps]
    return {"judge_validity": {"judges": judges}, "comparisons": comparisons}


def _mean_of(values: list[int]) -> Fraction:
    return Fraction(sum(values), len(values))


def _whole(h, q: str, have: set[str], by_cell) -> bool:
    """Every answer of both arms to question q (at the hypothesis's quant) is in ``have``."""
    return all(by_cell.get((arm, h.quant, q)) and all(lab in have for lab in by_cell[(arm, h.quant, q)])
               for arm in (h.a, h.b))


def _pair(h, mine: dict[str, int], golden, have: set[str], by_cell, questions, resamples: int,
          seed: int) -> dict[str, Any]:
    """The differential offset: per question, the judge's difference b - a against the gold's, each arm's score the
    mean over its answers, with the paired bootstrap over questions."""
    ids = [q for q, tags in questions.items() if all(t in tags for t in h.subset) and _whole(h, q, have, by_cell)]
    judged_d, gold_d = [], []
    for q in ids:
        judged = {arm: _mean_of([mine[lab] for lab in by_cell[(arm, h.quant, q)]]) for arm in (h.a, h.b)}
        judged_d.append(judged[h.b] - judged[h.a])
        gold_d.append(_mean_of(golden[(h.b, h.quant, q)]) - _mean_of(golden[(h.a, h.quant, q)]))
    return {"id": h.id, "questions": len(ids),
            "offset_difference": offset(judged_d, gold_d, resamples=resamples, seed=seed, unit="questions")}


def redraw(population: list[str], n: int, seed: int) -> list[str] | None:
    """A sample of questions for labelling drawn again by this path, from the documented rule (judge.numbers.stats.ppi's
    label_sample): ``numpy.random.default_rng(seed).choice`` of n positions without replacement in the sorted
    distinct ids, in id order; None when n cannot be drawn."""
    pool = sorted(set(population))
    if not 0 <= n <= len(pool):
        return None
    try:
        rng = np.random.default_rng(seed)
    except ValueError:  # a negative seed: numpy draws from none
        return None
    return [pool[i] for i in sorted(rng.choice(len(pool), size=n, replace=False).tolist())]


def drawn_questions(gold, keys: dict[str, dict], questions: dict[str, list[str]]) -> tuple[set[str], list[str]]:
    """The questions whose people's labels are a random sample by this path's own reading of the draws, and the
    findings: a draw whose population is not the run's questions, or whose picks are not what its seed draws, was
    not made by `judge label --sample`. A draw counts only when every answer (blinding key) of every question it
    picked has a person's label."""
    human = {s.label for s in gold.scores if s.source == "human" and s.status == "scored"}
    answers: dict[str, list[str]] = defaultdict(list)
    for k in keys.values():
        answers[k["question_id"]].append(k["label"])
    ok: set[str] = set()
    findings = []
    for d in gold.draws:
        where = f"labels/_samples.jsonl line {d.line}"
        if sorted(d.population) != sorted(questions):
            findings.append(f"{where}: the draw's population is not the run's questions: a hand-made draw")
            continue
        again = redraw(list(d.population), d.n, d.seed)
        if again != list(d.picked):
            findings.append(f"{where}: seed {d.seed} draws {again} (n {d.n}), the file records {list(d.picked)}: "
                            "picks the seed does not draw")
            continue
        if all(lab in human for q in d.picked for lab in answers[q]):
            ok |= set(d.picked)
    return ok, findings


def _design(s, drawn: set[str]) -> str:
    """A gold score's design as this path decides it: a person's label outside a complete stratum is a random sample
    only on a question of a draw this path accepts (``drawn_questions``); the rest as judge.gold.sources gives it."""
    if s.source != "human" or s.stratum is not None:
        return s.design
    return "random_sample" if s.question_id in drawn else "convenience"


def _gold_split(h, run: dict, gold, scored, keys, by_cell, verdicts,
                questions) -> tuple[str | None, dict | None] | None:
    """The design of the gold that may correct hypothesis h and the strata it corrects on (name -> gold, judge on
    the labelled questions, judge on the others), None where it cannot; None altogether with fewer than 2 questions
    paired."""
    primary = run["judge"]["primary"]
    per: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for j in verdicts:
        if j["judge"] == primary and j.get("status") == "scored" and (j.get("kind") or "single") == "single" \
                and j["label"] in keys:
            k = keys[j["label"]]
            per[(k["arm"], k["quant"])][k["question_id"]].append(j["score"])
    a, b = per[(h.a, h.quant)], per[(h.b, h.quant)]
    ids = [q for q, tags in questions.items() if all(t in tags for t in h.subset) and q in a and q in b]
    if len(ids) < 2:
        return None
    drawn, _ = drawn_questions(gold, keys, questions)
    design_of = {id(s): _design(s, drawn) for s in scored}
    usable = [s for s in scored if design_of[id(s)] != "convenience"]
    have = {s.label for s in usable}
    values: dict[tuple, list[int]] = defaultdict(list)
    designs_of: dict[tuple, set[str]] = defaultdict(set)
    for s in usable:
        values[(s.arm, s.quant, s.question_id)].append(s.score)
        designs_of[(s.arm, s.quant, s.question_id)].add(design_of[id(s)])
    complete = [t.name for t in gold.strata if t.complete]
    groups: dict[Any, list[tuple[float, float | None]]] = defaultdict(list)
    designs: set[str] = set()
    for q in ids:
        f = float(Fraction(sum(b[q]), len(b[q])) - Fraction(sum(a[q]), len(a[q])))
        g = None
        if _whole(h, q, have, by_cell):
            gb, ga = (Fraction(sum(values[(arm, h.quant, q)]), len(values[(arm, h.quant, q)])) for arm in (h.b, h.a))
            g = float(gb - ga)
            designs |= designs_of[(h.a, h.quant, q)] | designs_of[(h.b, h.quant, q)]
        groups[next((t for t in questions[q] if t in complete), None)].append((f, g))
    if not designs:
        return ("convenience" if any(design_of[id(s)] == "convenience" and s.question_id in ids for s in scored)
                else None, None)
    design = "random_sample" if "random_sample" in designs else "complete_strata"
    split = {}
    for name, rows in groups.items():
        labelled = [(f, g) for f, g in rows if g is not None]
        if not labelled or (len(labelled) < len(rows) and (design == "complete_strata" or len(labelled) < 2)):
            return design, None
        split[name] = ([g for _, g in labelled], [f for f, _ in labelled], [f for f, g in rows if g is None])
    return design, split


def _correction(h, run: dict, gold, scored, keys, by_cell, verdicts, questions, alpha: float,
                earlier: bool) -> dict[str, Any]:
    found = _gold_split(h, run, gold, scored, keys, by_cell, verdicts, questions)
    if found is None:
        return {}
    design, split = found
    if split is None:
        return {"design": design, "ppi": None}
    step = step_of(list(gold.scale), earlier)
    p, only = guarded(split, alpha, False, step), guarded(split, alpha, True, step)
    if earlier:  # that version recorded no step
        del p["step"], only["step"]
    return {"design": design, "ppi": p, "gold_only": only,
            "verdict": verdict_between(h.kind, h.margin, p["low"], p["high"])}


def _redrawn(parts: list[tuple[Any, tuple]], shift: float, rng: np.random.Generator) -> dict[Any, tuple]:
    """One simulated data set: per stratum in order, ``rng.integers(0, n, n + m)``, the first n labelled (gold and
    judge), the judge's differences of the other m unlabelled, each shifted."""
    drawn = {}
    for name, (d, fl, fu) in parts:
        n = len(d)
        idx = rng.integers(0, n, n + len(fu)).tolist()
        drawn[name] = ([d[i] + shift for i in idx[:n]], [fl[i] + shift for i in idx[:n]],
                       [fl[i] + shift for i in idx[n:]])
    return drawn


def calibration(split: dict[Any, tuple[list[float], list[float], list[float]]], kind: str, margin: float,
                alpha: float, sims: int, seed: int, ceiling: float, step: float) -> dict[str, Any]:
    """The gold-corrected decision's false-claim rate simulated at the boundary, by this path's loop on the draws
    judge.numbers.stats.calibration.calibrate_ppi documents: the strata in the order of their names as text; the gold
    and judge differences shifted together so that the weighted gold mean is the boundary; per simulated data set
    and stratum ``rng.integers(0, n, n + m)``, the first n labelled, the judge's differences of the rest unlabelled."""
    parts = sorted(split.items(), key=lambda kv: str(kv[0]))
    target = boundary(kind, margin, guarded(dict(parts), alpha, False, step)["estimate"])
    total = sum(len(d) + len(fu) for _, (d, _, fu) in parts)  # each stratum weighs by its questions, gold or not
    shift = target - math.fsum((len(d) + len(fu)) / total * math.fsum(d) / len(d) for _, (d, _, fu) in parts)
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sims):
        p = guarded(_redrawn(parts, shift, rng), alpha, False, step)
        hits += verdict_between(kind, margin, p["low"], p["high"]) in CLAIMS[kind]
    return {"boundary": float(target), "sims": sims, "claims": hits, "rate": hits / sims, "ceiling": float(ceiling),
            "seed": seed, "interval": "ppi"}


def corrected_verdicts(run: dict, exp, gold, keys: dict[str, dict], verdicts: list[dict],
                       questions: dict[str, list[str]], earlier: bool = False):
    """Under ``judge_error = "decide"``: a function (hypothesis id, one-sided level) -> the verdict of this path's
    gold-corrected interval computed at that level, None where the hypothesis has no corrected interval (it is
    then inconclusive). The strata are split once per hypothesis."""
    scored = [s for s in gold.scores if s.status == "scored"]
    by_cell: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for k in keys.values():
        by_cell[(k["arm"], k["quant"], k["question_id"])].append(k["label"])
    hyps = {h.id: h for h in exp.hypotheses}
    splits: dict[str, dict | None] = {}

    def at(hid: str, alpha: float) -> str | None:
        h = hyps[hid]
        if hid not in splits:
            found = _gold_split(h, run, gold, scored, keys, by_cell, verdicts, questions)
            splits[hid] = None if found is None else found[1]
        if splits[hid] is None:
            return None
        p = guarded(splits[hid], alpha, gold_only=False, step=step_of(list(gold.scale), earlier))
        return verdict_between(h.kind, h.margin, p["low"], p["high"])
    return at


def decide(comparisons: list[dict], check: dict, run: dict, exp, gold, keys: dict[str, dict], verdicts: list[dict],
           questions: dict[str, list[str]], alphas: dict[str, float], earlier: bool = False) -> None:
    """What the gold adds to this path's own verdicts (``comparisons``, after the family, which under
    ``judge_error = "decide"`` stepped down on ``corrected_verdicts``): under "decide" the corrected interval's
    calibration, where it has one (a diagnostic: it withdraws nothing); then ``min_gold_agreement`` against the lower
    end of the primary judge's kappa interval recomputed here (``check``: ``recompute``'s result)."""
    an, floor = exp.analysis, exp.min_gold_agreement
    scored = [s for s in gold.scores if s.status == "scored"]
    by_cell: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for k in keys.values():
        by_cell[(k["arm"], k["quant"], k["question_id"])].append(k["label"])
    corrected = {c["id"]: c["judge_error"] for c in check["comparisons"]}
    primary = next((j.get("agreement") for j in check["judge_validity"]["judges"]
                    if j["id"] == run["judge"]["primary"]), None)
    hyps = {h.id: h for h in exp.hypotheses}
    for c in comparisons:
        h, e = hyps[c["id"]], corrected.get(c["id"]) or {}
        if an.judge_error == "decide" and e.get("ppi") is not None:
            _, split = _gold_split(h, run, gold, scored, keys, by_cell, verdicts, questions)
            cap = an.calibration_ceiling
            c["calibration"] = calibration(split, h.kind, h.margin, alphas.get(h.id) or h.alpha, an.calibration_sims,
                                           an.seed, float(cap) if cap is not None else 2 * h.alpha,
                                           step_of(list(gold.scale), earlier))
        if floor is not None and c["verdict"] != "inconclusive":
            low = primary["kappa_low"] if primary else None
            if low is None or low < floor:
                c["verdict"] = "inconclusive"
