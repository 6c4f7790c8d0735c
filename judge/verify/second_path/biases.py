"""`judge verify`'s own recomputation of the judge-bias numbers (judge.numbers.bias_checks), from the raw records read
by hand: it imports nothing from judge.numbers.stats, judge.numbers.biases or judge.numbers.bias_checks, so a slip there
cannot hide here.

Recomputed: each judge's per-question means, its estimate and paired count on each hypothesis, whether it shares an
arm's family, a same-family judge's lift and its percentile bootstrap interval (drawn with numpy's generator from the
registered seed, by the decisions' scheme, whole clusters when the question set registers them), each judge's
interval and verdict by verify's own decision code (judge.verify.second_path.decisions) on the same resampling units,
the style regression over each hypothesis's pairs by its normal equations
(answer style counted by this module's own patterns), the test-retest flips and quadratic kappa, and the family:
the procedure (Holm's steps, the fixed sequence and where it stopped) run again on the claims. A claim at the
registered alpha is this path's own verdict; a claim at an adjusted alpha is the main path's (its `tests`), itself
recomputed by the main path, and under the score rule checked against verify's own score test at that alpha
(`forged_claims`): the family check is independent in its procedure and in every claim it lets stand. Under
`judge_error = "decide"` with gold the verdicts the family steps down on are the gold-corrected ones, this path's
own (judge.verify.second_path.judge_error.corrected_verdicts) at every level: a claim at an adjusted alpha stands only
where this path's corrected interval at that alpha claims too. Under the
panel rule "all-agree" the decision is this path's own (inconclusive where its per-judge verdicts differ); under
"unrelated-mean" the main path's. The test-retest kappa's bootstrap interval is this path's own loop on the same
documented resamples (agreement.kappa_boots), the flip rate's exact interval from the beta quantiles. Which
cautions are raised is decided again here (`caution_findings`); their wording is the main path's.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

from core import jsonl
from registration.rubric import load_rubric, rubric_dir
from registration.vocabulary import PASS_HAT_K

from . import agreement, bootstrap, contamination, score_test
from . import decisions as second_path
from .decision_rules.interval import verdict_between
from .panel_rules import PANEL_RULES

# what each style covariate counts, written again here (the main path's patterns are judge.numbers.biases')
_CITATION = re.compile(r"\b(?:Article|Section|Art\.|Rule|Clause)\s+\d+(?:\.\d+)*|§\s*\d+(?:\.\d+)*|\[\d+\]"
                       r"|\b[A-Z]{2,}-\d+\b")
_HEADER = re.compile(r"(?m)^ {0,3}#{1,6}(?:[ \t]|$)")
_LIST_ITEM = re.compile(r"(?m)^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\S")
_CLAIMS = {"non_inferiority": ("non-inferior", "superior"), "superiority": ("superior",),
           "equivalence": ("equivalent",)}


def _style(text: str, covariate: str) -> float:
    if covariate == "length":
        return math.log(1 + len(text.split()))
    pattern = {"headers": _HEADER, "list_items": _LIST_ITEM, "citations": _CITATION}[covariate]
    return float(len(pattern.findall(text)))


def _means(keys: dict[str, dict], verdicts: list[dict], judge: str) -> dict[tuple, dict[str, Fraction]]:
    per: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for j in verdicts:
        if j["judge"] == judge and j["status"] == "scored" and j["label"] in keys:
            k = keys[j["label"]]
            per[(k["arm"], k["quant"])][k["question_id"]].append(j["score"])
    return {cell: {q: Fraction(sum(v), len(v)) for q, v in qs.items()} for cell, qs in per.items()}


def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gauss-Jordan with partial pivoting; None when singular."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[piv][col]) < 1e-12 * max(1.0, max(abs(x) for row in a for x in row)):
            return None
        m[col], m[piv] = m[piv], m[col]
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def _ols(y: list[float], xs: dict[str, list[float]], alpha: float) -> dict[str, Any]:
    from scipy.stats import t as student_t

    used = [c for c, v in xs.items() if any(x != 0 for x in v)]
    n, p = len(y), 1 + len(used)
    rows = [[1.0] + [xs[c][i] for c in used] for i in range(n)]
    out: dict[str, Any] = {"n": n, "covariates": used, "raw": math.fsum(y) / n}
    xtx = [[math.fsum(r[i] * r[j] for r in rows) for j in range(p)] for i in range(p)]
    inv = [_solve(xtx, [float(i == j) for i in range(p)]) for j in range(p)] if n - p >= 1 else None
    if inv is None or any(col is None for col in inv):
        out["adjusted"] = None
        return out
    beta = [math.fsum(inv[j][i] * math.fsum(r[j] * yy for r, yy in zip(rows, y, strict=True)) for j in range(p))
            for i in range(p)]
    resid = [yy - math.fsum(b * x for b, x in zip(beta, r, strict=True)) for r, yy in zip(rows, y, strict=True)]
    se = math.sqrt(math.fsum(e * e for e in resid) / (n - p) * inv[0][0])
    t = float(student_t.ppf(1 - alpha, n - p))
    out.update(adjusted=beta[0], se=se, df=n - p, ci_low=beta[0] - t * se, ci_high=beta[0] + t * se,
               slopes=dict(zip(used, beta[1:], strict=True)))
    return out


def judge_decision(h, exp, means: dict[tuple, dict[str, Fraction]], ids: list[str],
                    clusters: dict[str, str | None]) -> dict[str, Any]:
    """One judge's estimate, interval and verdict on a hypothesis by verify's own decision code
    (judge.verify.second_path.decisions), resampled as its decision is: whole clusters when the questions have them."""
    a, b = means[(h.a, h.quant)], means[(h.b, h.quant)]
    an = exp.analysis
    points = load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir)).scale
    chk = second_path.comparison([a[q] for q in ids], [b[q] for q in ids], alpha=h.alpha, margin=h.margin,
                                 rule=an.rule, method=an.method, resamples=an.resamples, seed=an.seed,
                                 scale=(min(points), max(points), max(exp.arm(h.a).samples, exp.arm(h.b).samples)),
                                 labels=bootstrap.unit_labels(ids, clusters))
    return {"n": chk["n"], "estimate": chk["diff"], "ci_low": chk["ci_low"], "ci_high": chk["ci_high"],
            "bound": chk["bound"], "verdict": second_path.verdict(h.kind, h.margin, chk),
            "resampling": chk["resampling"], "units": chk["units"]}


def judge_lift(d: dict[str, dict[str, Fraction]], j: str, others: list[str], common: list[str],
          clusters: dict[str, str | None], resamples: int, seed: int) -> dict[str, Any]:
    """Judge j's lift over the others, exactly, and its 95% percentile interval on resamples drawn by the decisions'
    scheme (judge.verify.second_path.bootstrap.draw: whole clusters when the questions have them), each resample's mean
    taken by check_paired's own loop."""
    per_q = [d[j][q] - sum(d[o][q] for o in others) / len(others) for q in common]
    chk = bootstrap.mean_interval(per_q, bootstrap.unit_labels(common, clusters), resamples, seed)
    n, own = len(common), sum(d[j][q] for q in common) / len(common)
    return {"judge": j, "others": others, "n": n, "estimate": float(own), "lift": float(sum(per_q) / n),
            "others_estimate": float(own - sum(per_q) / n), "ci_low": chk["ci_low"], "ci_high": chk["ci_high"],
            "resampling": chk["resampling"], "units": chk["units"]}


def _tests(comparison: dict | None) -> list[dict]:
    """The family's tests a stored comparison records (core.records.FamilyTest); none for a comparison numbers.json
    does not hold, or one decided before the family."""
    return ((comparison or {}).get("family") or {"tests": []})["tests"]


def _family(method: str, comparisons: list[dict], stored: dict[str, dict],
            corrected: Callable[[str, float], str | None] | None = None) -> tuple[dict, dict[str, dict]]:
    """The family procedure run again. A claim at the registered alpha is this path's verdict; at another alpha the
    main path's recorded test (none recorded: no claim), and under ``judge_error = "decide"`` (``corrected``: this
    path's gold-corrected verdict at a level) only where this path's corrected interval claims there too."""
    ids = [c["id"] for c in comparisons]
    alphas = {c["id"]: c["alpha"] for c in comparisons}
    by_id = {c["id"]: c for c in comparisons}

    def claims(h: str, a: float) -> bool:
        c = by_id[h]
        own = c["own_verdict"] in _CLAIMS[c["kind"]]
        if a == alphas[h] or not own:
            return own
        if corrected is not None and corrected(h, a) not in _CLAIMS[c["kind"]]:
            return False
        recorded = [t for t in _tests(stored.get(h)) if t["alpha"] == a]
        return bool(recorded and recorded[0]["claim"])

    steps, stopped = {}, None
    if method == "none":
        steps = {h: {"tested_at": alphas[h], "claimed": claims(h, alphas[h]), "step": None} for h in ids}
    elif method == "fixed-sequence":
        for i, h in enumerate(ids):
            if stopped is not None:
                steps[h] = {"tested_at": None, "claimed": False, "step": i + 1}
                continue
            ok = claims(h, alphas[h])
            steps[h] = {"tested_at": alphas[h], "claimed": ok, "step": i + 1}
            stopped = None if ok else h
    else:
        left, step = list(ids), 0
        steps = {h: {"tested_at": None, "claimed": False, "step": None} for h in ids}
        while left:
            step += 1
            for h in left:
                steps[h]["tested_at"] = alphas[h] / len(left)
            won = [h for h in left if claims(h, alphas[h] / len(left))]
            if not won:
                break
            for h in won:
                steps[h].update(claimed=True, step=step)
            left = [h for h in left if h not in won]
    fam = {"method": method, "size": len(ids), "stopped_at": stopped,
           "steps": [{"id": h, "alpha": alphas[h], **steps[h]} for h in ids]}
    return fam, steps


def forged_claims(numbers: dict, exp, means: dict[tuple, dict[str, Fraction]], questions: dict[str, list[str]],
                  clusters: dict[str, str | None], gold_decides: bool = False,
                  indicators: dict[tuple, dict[str, Fraction]] | None = None) -> list[str]:
    """Under the score rule, each claim the family recorded at an adjusted alpha must be one the score test makes
    at that alpha by verify's own implementation (judge.verify.second_path) on the primary judge's scores: a claim it
    does not make is a finding. (Withdrawn claims may be the clusters', checked by the main path.) None where a
    gold-corrected interval decides (``gold_decides``): its claims are checked by this path's own corrected
    interval at each level (``_family``), and the judge's score test does not decide them. A pass^k hypothesis is
    tested on ``indicators`` (second_path.decisions.pass_hat_k), on the range 1."""
    if exp.analysis.rule != "score" or not PANEL_RULES[exp.judge_panel_rule].claims_checked or gold_decides:
        return []
    points = second_path.rubric_scale(exp)
    span = max(points) - min(points)
    hyps = {h.id: h for h in exp.hypotheses}
    out = []
    for c in numbers["comparisons"]:
        h = hyps.get(c["id"])
        if h is None:  # an id no hypothesis registers: the recomputations name it (it is not one they produce)
            continue
        on, width = (indicators, 1) if h.statistic == PASS_HAT_K else (means, span)
        a, b = on.get((h.a, h.quant), {}), on.get((h.b, h.quant), {})
        ids = [q for q, tags in questions.items() if all(t in tags for t in h.subset) and q in a and q in b
               and q not in contamination.left_out(exp, h)]
        for t in _tests(c):
            if not t["claim"] or t["alpha"] == c["alpha"] or len(ids) < 2:
                continue
            units = ([("cluster", clusters[q]) if clusters.get(q) else ("question", q) for q in ids]
                     if any(clusters.get(q) for q in ids) else None)
            m = Fraction(repr(float(h.margin))) if h.margin else Fraction(0)
            found = score_test.boundary_tests([b[q] - a[q] for q in ids], m, width, t["alpha"], units)
            own = score_test.tests_verdict(h.kind, h.margin, found) if found else "inconclusive"
            if own not in _CLAIMS[h.kind]:
                out.append(f"numbers.json comparisons[{c['id']}].family.tests: a claim ({t['verdict']!r}) at "
                           f"one-sided α = {t['alpha']:.5g}, but verify's own score test there says {own!r}")
    return out


def caution_findings(numbers: dict, ind: dict, exp) -> list[str]:
    """Which cautions each comparison raises, decided again by this path from its own numbers (their texts are the
    main path's): a self-preference caution for each same-family judge with a lift where the judges' own verdicts
    differ, none elsewhere; a style caution where the decision interval moved by the style adjustment would decide
    otherwise. A caution raised where this path raises none, or missing where it raises one, is a finding."""
    hyps = {h.id: h for h in exp.hypotheses}
    stored = {c["id"]: c for c in numbers["comparisons"]}
    out = []
    for entry in ind["comparisons"]:
        h, s = hyps[entry["id"]], stored.get(entry["id"]) or {}
        sp = entry.get("self_preference")
        if sp is not None:
            differ = len({v["verdict"] for v in sp["judges"].values()}) > 1
            want = sorted(sp["lifts"]) if differ else []
            notes = (s.get("self_preference") or {}).get("notes") or []
            named = [m.group(1) if (m := re.match(r"judge (\S+) shares", str(n))) else None for n in notes]
            if named != want:
                out.append(f"numbers.json comparisons[{h.id}].self_preference.notes: self-preference cautions for "
                           f"{named}, but verify's own path raises them for {want} (the judges' own verdicts "
                           f"{'differ' if differ else 'agree'})")
        style, result = entry.get("style"), entry.get("result")
        if style is not None and result and {"bound", "upper"} <= set(result):
            raised = False
            if style.get("adjusted") is not None and style["covariates"]:
                shift = style["adjusted"] - style["raw"]
                low, high = result["bound"], result["upper"]
                raised = (verdict_between(h.kind, h.margin, low + shift, high + shift)
                          != verdict_between(h.kind, h.margin, low, high))
            notes = s.get("length_notes") or []
            if len(notes) != int(raised):
                out.append(f"numbers.json comparisons[{h.id}].length_notes: {len(notes)} style caution(s), but "
                           f"verify's own path raises {int(raised)} (the decision interval moved by its style "
                           f"adjustment {'would' if raised else 'would not'} decide otherwise)")
    return out


def clopper_pearson(x: int, n: int) -> list[float]:
    """The exact 95% interval of a binomial proportion x / n, from the beta distribution's quantiles."""
    from scipy.stats import beta

    low = 0.0 if x == 0 else float(beta.ppf(0.025, x, n - x + 1))
    high = 1.0 if x == n else float(beta.ppf(0.975, x + 1, n - x))
    return [low, high]


def retest_kappa_interval(test: list[int], again: list[int], scale: list[int], seed: int) -> list[float] | None:
    """The 95% percentile interval of test-retest kappa on the analysis's 1,000 resamples of the labels (resample r
    the r-th ``default_rng(seed).integers(0, n, n)``), by this path's own loop (judge.verify.second_path.agreement
    .kappa_boots, which the judges' agreement interval uses too); None when 100 resamples or fewer give a kappa."""
    boots = [k for k in agreement.kappa_boots(test, again, scale, seed) if math.isfinite(k)]
    return [agreement.percentile(boots, q) for q in (2.5, 97.5)] if len(boots) > 100 else None


def recheck(numbers: dict, run: dict, run_dir: Path, exp, questions: dict[str, list[str]], answers: list[dict],
            verdicts: list[dict], ind: dict, clusters: dict[str, str | None],
            corrected: Callable[[str, float], str | None] | None = None) -> list[str]:
    """Add to `ind` (verify's independent numbers) this module's recomputation of the bias numbers, and give its
    comparisons their verdict after the family adjustment; returns the findings of `forged_claims`. `corrected`:
    under ``judge_error = "decide"`` with gold, this path's gold-corrected verdict of a hypothesis at a level
    (judge.verify.second_path.judge_error.corrected_verdicts), which replaces the judge-only verdict the judge did not
    already leave inconclusive, at its registered level and at every level the family tests it at."""
    keys = {r["label"]: r for _, r in jsonl.read(run_dir / "blinding.jsonl") if r.get("type") == "blinding"}
    single = [j for j in verdicts if (j.get("kind") or ("pairwise" if str(j["label"]).startswith("P") else "single"))
              == "single"]
    panel = run["judge"]["panel"]
    means = {j: _means(keys, single, j) for j in panel}
    families = {j.name: exp.models[j.model].family for j in exp.judges}
    an = exp.analysis
    hyps = {h.id: h for h in exp.hypotheses}
    stored = {c["id"]: c for c in numbers["comparisons"]}
    texts: dict[tuple, list[str]] = defaultdict(list)
    for a in answers:
        if a["status"] == "ok":
            texts[(a["arm"], a["quant"], a["question_id"])].append(a.get("text") or "")
    for entry in ind["comparisons"]:
        h = hyps[entry["id"]]
        wanted = [q for q, tags in questions.items() if all(t in tags for t in h.subset)
                  and q not in contamination.left_out(exp, h)]
        arm_fams = [exp.models[exp.arm(x).model].family for x in (h.a, h.b)]
        d = {}
        for j in panel:
            a_m, b_m = means[j].get((h.a, h.quant), {}), means[j].get((h.b, h.quant), {})
            ids = [q for q in wanted if q in a_m and q in b_m]
            if len(ids) >= 2:
                d[j] = {q: b_m[q] - a_m[q] for q in ids}
        sp = None
        if len(d) >= 2:
            sp = {"judges": {j: {"family": families.get(j),
                                 "shares_family": bool(families.get(j)) and families.get(j) in arm_fams,
                                 **judge_decision(h, exp, means[j], list(v), clusters)} for j, v in d.items()},
                  "lifts": {}}
            for j in sorted(d):
                others = sorted(o for o in d if o != j)
                common = sorted(set(d[j]).intersection(*(set(d[o]) for o in others)))
                if not sp["judges"][j]["shares_family"] or len(common) < 2:
                    continue
                sp["lifts"][j] = judge_lift(d, j, others, common, clusters, an.resamples, an.seed)
        entry["self_preference"] = sp
        s = stored.get(h.id) or {}
        ids = entry["paired_questions"]
        rule = PANEL_RULES[exp.judge_panel_rule]
        if s.get("result") is not None and rule.primary_decides:
            primary = means[run["judge"]["primary"]]
            y = [float(primary[(h.b, h.quant)][q] - primary[(h.a, h.quant)][q]) for q in ids]

            def style(arm: str, q: str, c: str, quant: str = h.quant) -> float:
                ts = texts.get((arm, quant, q)) or [""]
                return math.fsum(_style(t, c) for t in ts) / len(ts)

            xs = {c: [style(h.b, q, c) - style(h.a, q, c) for q in ids] for c in an.style}
            entry["style"] = _ols(y, xs, h.alpha)
        if rule.primary_decides:
            entry["verdict"] = rule.verdict(entry["verdict"], sp)
        else:  # decided on other scores than the primary judge's: main path only
            entry.pop("result", None)
            at = [t for t in _tests(s) if t["alpha"] == h.alpha]
            entry["verdict"] = at[0]["verdict"] if at else s.get("verdict")
        if corrected is not None and entry["verdict"] != "inconclusive":
            entry["verdict"] = corrected(h.id, h.alpha) or "inconclusive"
        entry["own_verdict"], entry["kind"], entry["alpha"] = entry["verdict"], h.kind, h.alpha
    fam, steps = _family(an.family, ind["comparisons"], stored, corrected)
    ind["family"] = fam
    for entry in ind["comparisons"]:
        st = steps[entry["id"]]
        entry["family"] = {"method": an.family, "size": fam["size"], "stopped_at": fam["stopped_at"], **st}
        if st["tested_at"] is None:
            entry["verdict"] = "inconclusive"
        elif st["tested_at"] != entry["alpha"] and entry["own_verdict"] in _CLAIMS[entry["kind"]]:
            tests = [t for t in _tests(stored.get(entry["id"])) if t["alpha"] == st["tested_at"]]
            entry["verdict"] = tests[0]["verdict"] if tests else "inconclusive"
            if corrected is not None and entry["verdict"] != "inconclusive":  # the judge's gate is the main path's
                entry["verdict"] = corrected(entry["id"], st["tested_at"]) or "inconclusive"
        for k in ("own_verdict", "kind", "alpha"):
            entry.pop(k)
    ind.setdefault("judges", {})
    path = run_dir / "retests.jsonl"
    if path.exists():
        retests: dict[tuple, dict] = {}
        for _, r in jsonl.read(path):
            retests[(r["judge"], r["label"], r["retest"])] = r
        first = {(j["judge"], j["label"]): j for j in single}
        scale = sorted(second_path.rubric_scale(exp))
        rows = {}
        for name in sorted({k[0] for k in retests}):
            mine = [r for k, r in retests.items() if k[0] == name]
            pairs = [(first[(name, r["label"])]["score"], r["score"]) for r in mine if r["status"] == "scored"
                     and first.get((name, r["label"]), {}).get("status") == "scored"]
            flips = sum(x != y for x, y in pairs)
            test, again = [x for x, _ in pairs], [y for _, y in pairs]
            rows[name] = {"judge": name, "drawn": len(mine), "n": len(pairs), "flips": flips,
                          "flip_rate": flips / len(pairs) if pairs else None,
                          "flip_ci95": clopper_pearson(flips, len(pairs)) if pairs else None,
                          "kappa_quadratic": agreement.kappa_quadratic(test, again, scale) if len(pairs) >= 2
                          else None,
                          "kappa_ci95": retest_kappa_interval(test, again, scale, an.seed) if len(pairs) >= 2
                          else None}
        ind["judges"]["retest"] = {"judges": rows}
    primary = run["judge"]["primary"]
    return (forged_claims(numbers, exp, means[primary], questions, clusters, corrected is not None,
                          second_path.pass_hat_k(keys, single, primary, exp))
            + caution_findings(numbers, ind, exp))
