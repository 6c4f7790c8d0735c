"""Each judge again, from the raw files: its means per cell, its agreement with the other judges (exact, quadratic
kappa with its bootstrap interval, Krippendorff's ordinal alpha), its length bias and its pairwise counts, by plain
loops.
"""
from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from core import jsonl

from .agreement import alpha_ordinal, kappa_boots, kappa_quadratic, pearson, percentile, ranks, solve3
from .decisions import rubric_scale
from .raw_files import Final, kind_of


def independent_judges(numbers: dict, run: dict, run_dir: Path, questions: dict[str, list[str]], exp,
                       answer_rows: Final, verdicts: Final) -> dict:
    """Per-judge means, agreement (exact, quadratic kappa), length bias and pairwise counts, by plain loops."""
    keys, pairs = {}, {}
    for _, r in jsonl.read(run_dir / "blinding.jsonl"):
        (pairs if r.get("type") == "pair" else keys)[r["label"]] = r
    text = {a["row"]: a.get("text") or "" for a in answer_rows.last.values()}
    judgments = list(verdicts.last.values())
    panel = run["judge"]["panel"]
    hyps = [h for h in exp.hypotheses if h.a in run["arms"] and h.b in run["arms"]]
    out: dict[str, Any] = {"means": {}, "length_bias": {}, "pairwise": {}}
    scored: dict[str, dict[str, int]] = {}
    for name in panel:
        rows = [(keys[j["label"]], j["score"]) for j in judgments if j["judge"] == name
                and kind_of(j) == "single" and j["status"] == "scored" and j["label"] in keys]
        scored[name] = {k["label"]: sc for k, sc in rows}
        by_cell: dict[str, list[int]] = defaultdict(list)
        for k, sc in rows:
            by_cell[f"{k['arm']}/{k['quant']}"].append(sc)
        out["means"][name] = {c: math.fsum(v) / len(v) for c, v in by_cell.items()}
        pts = [(k["arm"], k["quant"], len(text.get(k["row"], "").split()), sc) for k, sc in rows]
        lb: dict[str, Any] = {"answers": len(pts), "comparisons": []}
        if len(pts) >= 3 and len({p[2] for p in pts}) > 1 and len({p[3] for p in pts}) > 1:
            lb["length_spearman"] = pearson(ranks([p[2] for p in pts]),
                                                        ranks([p[3] for p in pts]))
        for h in hyps:
            sel = [(p[0] == h.b, math.log1p(p[2]), p[3]) for p in pts if p[1] == h.quant and p[0] in (h.a, h.b)]
            sa, sb = [s for isb, _, s in sel if not isb], [s for isb, _, s in sel if isb]
            entry: dict[str, Any] = {"id": h.id, "raw_difference": None, "length_adjusted_difference": None}
            if sa and sb:
                entry["raw_difference"] = math.fsum(sb) / len(sb) - math.fsum(sa) / len(sa)
                xs = [[1.0, float(isb), ll] for isb, ll, _ in sel]
                xtx = [[math.fsum(x[i] * x[j] for x in xs) for j in range(3)] for i in range(3)]
                xty = [math.fsum(x[i] * s for x, (_, _, s) in zip(xs, sel, strict=False)) for i in range(3)]
                beta = solve3(xtx, xty)
                entry["length_adjusted_difference"] = beta[1] if beta else None
            lb["comparisons"].append(entry)
        out["length_bias"][name] = lb
        if pairs:
            rows_p = []
            verdicts = {j["label"]: j for j in judgments if j["judge"] == name and kind_of(j) == "pairwise"}
            for h in hyps:
                per_q: dict[str, list] = defaultdict(list)
                for label, k in pairs.items():
                    if k["hypothesis"] == h.id and label in verdicts:
                        v = verdicts[label]
                        w = None if v["status"] != "scored" else {0: "tie", 1: k["first"], 2: k["second"]}[v["score"]]
                        per_q[k["question_id"]].append(w)
                both = {q: ws for q, ws in per_q.items() if len(ws) == 2 and None not in ws}
                final = [ws[0] if ws[0] == ws[1] else "tie" for ws in both.values()]
                rows_p.append({"hypothesis": h.id, "pairs": len(per_q), "both_orders_scored": len(both),
                               "consistent": sum(ws[0] == ws[1] for ws in both.values()),
                               "wins_b": final.count(h.b), "wins_a": final.count(h.a), "ties": final.count("tie")})
            out["pairwise"][name] = rows_p
    names = sorted(j for j in scored if scored[j])
    if len(names) >= 2:
        common = sorted(set.intersection(*(set(scored[j]) for j in names)))
        scale = list(rubric_scale(exp))
        agree = []
        for i, x in enumerate(names):
            for y in names[i + 1:]:
                both = sorted(set(scored[x]) & set(scored[y]))
                a, b = [scored[x][lab] for lab in both], [scored[y][lab] for lab in both]
                if len(a) >= 2:
                    boots = [k for k in kappa_boots(a, b, scale, exp.analysis.seed) if math.isfinite(k)]
                    agree.append({"judges": [x, y], "answers": len(a),
                                  "exact_agreement": sum(p == q for p, q in zip(a, b, strict=False)) / len(a),
                                  "kappa_quadratic": kappa_quadratic(a, b, scale),
                                  "kappa_ci95": ([percentile(boots, q) for q in (2.5, 97.5)]
                                                 if len(boots) > 100 else None)})
        pairable = sorted(lab for lab in set().union(*(scored[j] for j in names))
                          if sum(lab in scored[j] for j in names) >= 2)
        out["agreement"] = {"answers": len(common), "pairs": agree, "pairable_answers": len(pairable),
                            "krippendorff_alpha_ordinal": alpha_ordinal(
                                [[scored[j].get(lab) for lab in pairable] for j in names]) if pairable else None}
    return out
