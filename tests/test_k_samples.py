"""K samples per question end to end through the CLI: collection with a seed per sample, per-question means,
pairwise on sample 0, the exact decision at the margin, and `judge verify` recomputing all of it.

The arms and the judge are a ScriptedServer on 127.0.0.1 reached through the official openai SDK: each arm
answer names its arm, question and the seed it was sent, and the judge gives the score planted for that
(arm, question, sample), so every expected number is computed here from the planted scores.
"""
from __future__ import annotations

import json
import re
import shutil
from fractions import Fraction

import pytest
from test_decisions import k6_n30

from core import jsonl
from registration.seal import seal

from conftest import ROOT, cli, http_prereg
from support.scripted_server import ScriptedServer, Seen, Step, reply, verdict

pytestmark = pytest.mark.integration

ARMS = {"model-a": "alpha", "model-b": "beta"}
ANSWER = re.compile(r"Reply (alpha|beta) (\d\d) seed (\d+)")


def run_planted(tmp_path, planted: dict[str, list[list[int | None]]], clusters: list[str | None], analysis: str,
                mode: str = "single", long: dict[str, set[int]] | None = None):
    """Run `judge run` on len(clusters) questions with samples = K, the judge scoring as planted (None: no verdict,
    unscored; `long`: the questions an arm answers with 40 more words); return (results folder, server log, verify's
    result)."""
    n, k = len(clusters), len(planted["alpha"][0])
    exp, out = tmp_path / "exp", tmp_path / "out"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    with open(exp / "sets" / "exam.jsonl", "w") as f:
        for i, c in enumerate(clusters):
            f.write(json.dumps({"id": f"q{i:02d}", "question": f"What is item {i:02d}?", "reference": "It is.",
                                "tags": [], **({"cluster": c} if c else {})}) + "\n")

    def script(seen: Seen) -> Step:
        if seen.model != "judge-model":  # an arm answering: name the arm, the question and this sample's seed
            item = re.search(r"item (\d\d)", seen.prompt).group(1)
            pad = " more" * 40 if int(item) in (long or {}).get(ARMS[seen.model], ()) else ""
            return reply(f"Reply {ARMS[seen.model]} {item} seed {seen.body['seed']}.{pad}")
        if "<<<FIRST" in seen.prompt:
            return verdict({"rationale": "Both fine.", "preferred": 0})
        arm, item, seed = ANSWER.search(seen.prompt).groups()
        score = planted[arm][int(item)][int(seed)]
        if score is None:  # planted unscored: no verdict in any attempt
            return reply("I would rather not say.")
        return verdict({"rationale": "Planted.", "score": score, "harmful": False})

    models = "".join(f'[models.{m}]\nbackend = "openai"\nsource = "{m}"\nbase_url = "URL"\nfamily = "scripted"\n\n'
                     for m in ARMS)
    arms = "".join(f'[[arms]]\nname = "{arm}"\nmodel = "{m}"\nquants = ["served"]\nsamples = {k}\n'
                   'generation = { temperature = 0.7, max_tokens = 64, seed = 0 }\n\n'
                   for arm, m in (("base", "model-a"), ("trained", "model-b")))
    with ScriptedServer(script, models=(*ARMS, "judge-model")) as server:
        text = http_prereg("k-samples", server.openai_url, (models + arms).replace("URL", server.openai_url),
                           [("H1", "base", "trained")])
        text = text.replace('[judge]\nrubric = "correctness"\n', f'[judge]\nrubric = "correctness"\nmode = "{mode}"\n')
        text = re.sub(r"(?s)\[analysis\].*?\n\n", analysis + "\n\n", text)
        (exp / "prereg.toml").write_text(text)
        seal(exp)
        r = cli("judge", "run", "--exp", str(exp), "--arms", "--limit", str(n), "--out", str(out), "--quiet",
                env={"OPENAI_API_KEY": "sentinel"}, timeout=600)
        assert r.returncode == 0, r.stderr
    v = cli("judge", "verify", str(out), timeout=600)
    return out, server.seen, v


def test_k6_n30_through_the_cli_decides_the_exact_tie_as_not_shown_and_verifies(tmp_path):
    a, b = k6_n30()  # planted: the exact 97.5% bound (2,000 resamples, seed 7) is -1/10, the margin
    analysis = ('[analysis]\nresamples = 2000\nmethod = "percentile"\nseed = 7\nmax_unscored = 0.10\n'
                'rule = "bootstrap"\ncalibration_sims = 40')
    out, seen, v = run_planted(tmp_path, {"alpha": a, "beta": b}, [None] * 30, analysis, mode="both")
    assert v.returncode == 0, v.stdout + v.stderr  # main and plain-Python paths agree, bit for bit at the tie

    # collection: every (arm, question, sample) once, each sample sent its own seed (registered seed 0 + sample)
    asked = sorted((s.model, re.search(r"item (\d\d)", s.prompt).group(1), s.body["seed"]) for s in seen
                   if s.model in ARMS)
    assert asked == sorted((m, f"{q:02d}", k) for m in ARMS for q in range(30) for k in range(6))
    rows = [r for _, r in jsonl.read(out / "answers.jsonl")]
    assert len(rows) == 360 and all(f"seed {r['sample']}." in r["text"] for r in rows)

    numbers = json.loads((out / "numbers.json").read_text())
    cells = {c["arm"]: c for c in numbers["cells"]}
    for arm, planted in (("base", a), ("trained", b)):  # per question the mean of its 6 samples, then over questions
        assert cells[arm]["scored"] == 180 and cells[arm]["questions_scored"] == 30
        assert cells[arm]["mean"] == float(sum(Fraction(sum(r), 6) for r in planted) / 30)
    h1 = numbers["comparisons"][0]
    assert h1["result"]["bound"] == -0.1 and h1["verdict"] == "not shown"
    assert h1["result"]["resampling"] == "questions" and h1["calibration"]["sims"] == 40
    report = (out / "report.md").read_text()
    assert "Calibration: at a true difference of -0.100" in report and "bootstrap over 30 questions" in report

    # pairwise compares sample 0 of each arm, in both orders
    pair_prompts = [s.prompt for s in seen if s.model == "judge-model" and "<<<FIRST" in s.prompt]
    assert len(pair_prompts) == 60
    assert {m.group(3) for p in pair_prompts for m in ANSWER.finditer(p)} == {"0"}


def test_one_cluster_is_inconclusive_with_an_undefined_clustered_se_and_a_length_caution(tmp_path):
    # 20 questions in one cluster; the judge pays for length: 2 for a long answer, 1 for a short one. "trained"
    # always answers long, "base" only on odd questions, so the whole difference (+0.5) is length
    n = 20
    a = [[2] if i % 2 else [1] for i in range(n)]
    b = [[2] for _ in range(n)]
    long = {"alpha": {i for i in range(n) if i % 2}, "beta": set(range(n))}
    # registered rule "bootstrap": one cluster tells a cluster-aware rule nothing (the score rule has no test, the
    # bootstrap_and_t guard's CR1 bound spans the scale), so only the bootstrap's point interval has a decision for
    # the length adjustment to move
    analysis = ('[analysis]\nresamples = 2000\nmethod = "percentile"\nseed = 7\nmax_unscored = 0.10\n'
                'rule = "bootstrap"\ncalibration_sims = 40')
    out, _, v = run_planted(tmp_path, {"alpha": a, "beta": b}, ["c1"] * n, analysis, long=long)
    assert v.returncode == 0, v.stdout + v.stderr
    numbers = json.loads((out / "numbers.json").read_text())
    h1 = numbers["comparisons"][0]  # (changed below to show that verify recomputes the calibration)
    assert h1["verdict"] == "inconclusive" and "only 1 cluster(s)" in h1["reason"] and "minimum of 10" in h1["reason"]
    assert h1["clusters"] == 1 and h1["clustered_se"] is None and h1["result"]["resampling"] == "clusters"
    assert h1["result"]["diff"] == 0.5
    bias = numbers["judges"]["length_bias"]["openai"]["comparisons"][0]
    assert bias["raw_difference"] == 0.5 and abs(bias["length_adjusted_difference"]) < 1e-9  # all of it is length
    note = h1["length_notes"][0]  # over the hypothesis's own 20 pairs: the difference at equal length is 0
    assert len(h1["length_notes"]) == 1 and "20 pairs, adjusted for length the difference is +0.000" in note
    assert "instead of +0.500" in note and h1["style"]["adjusted"] == pytest.approx(0, abs=1e-9)
    report = (out / "report.md").read_text()
    assert "clustered SE undefined (one cluster)" in report and "cluster bootstrap over 1 clusters" in report
    assert "**Length caution:** over this hypothesis's 20 pairs, adjusted for length" in report

    # the calibration is recomputed by verify: a changed count is named by both paths
    h1["calibration"]["claims"] += 1
    (out / "numbers.json").write_text(json.dumps(numbers))
    bad = cli("judge", "verify", str(out), timeout=600)
    assert bad.returncode == 1
    assert "comparisons[H1].calibration.claims" in bad.stderr and "independent plain-Python" in bad.stderr


def test_stability_across_k3_samples_matches_the_hand_computation_and_verifies(tmp_path):
    # K = 3, 4 questions; trained's q02 has its second sample unscored (no verdict in either attempt)
    base = [[2, 2, 2], [2, 1, 2], [1, 1, 0], [0, 0, 0]]
    trained = [[2, 2, 2], [2, 2, 2], [2, None, 2], [1, 2, 1]]
    analysis = ('[analysis]\nresamples = 1000\nmethod = "percentile"\nseed = 7\nmax_unscored = 0.10\n'
                'calibration_sims = 20\npass_score = 2')
    out, _, v = run_planted(tmp_path, {"alpha": base, "beta": trained}, [None] * 4, analysis)
    assert v.returncode == 0, v.stdout + v.stderr  # both paths agree on every stability number
    cells = {c["arm"]: c for c in json.loads((out / "numbers.json").read_text())["stability"]["cells"]}
    got = {arm: {n: c[n]["estimate"] for n in ("pass_hat_k", "pass_at_k", "pass_rate", "unanimous", "agreement")}
           for arm, c in cells.items()}
    # base by hand: pass^k only q00 (1/4); pass@k q00, q01 (2/4); pass rate (3 + 2 + 0 + 0) / 12; unanimous q00, q03
    # (2/4); agreement per question 3/3, 1/3, 1/3, 3/3 of the pairs
    assert got["base"] == {"pass_hat_k": 0.25, "pass_at_k": 0.5, "pass_rate": 5 / 12, "unanimous": 0.5,
                           "agreement": 2 / 3}
    # trained: q02 left out (incomplete, never a fail); over q00, q01, q03: pass^k 2/3, pass@k 3/3, pass rate
    # (3 + 3 + 1) / 9, unanimous 2/3, agreement (1 + 1 + 1/3) / 3
    assert (cells["trained"]["questions"], cells["trained"]["incomplete"]) == (3, 1)
    assert got["trained"] == pytest.approx({"pass_hat_k": 2 / 3, "pass_at_k": 1.0, "pass_rate": 7 / 9,
                                            "unanimous": 2 / 3, "agreement": 7 / 9}, abs=1e-15)
    report = (out / "report.md").read_text()
    assert "| trained | served | 3 | 3 | 1 | 0.667 [" in report
    assert "A sample passes at a score of at least\n2." in report
