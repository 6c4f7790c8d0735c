"""The decision rule through `judge run` and `judge verify`, on planted verdicts.

The arms and the judge are a ScriptedServer on 127.0.0.1 reached through the official openai SDK; the judge gives
the score planted for each (arm, question) on the experiment's own rubric (0-2 or 0-10), so every expected verdict
is a planted fact: 11 ties and one win of half the scale can never prove non-inferiority at 12 questions, and 3
registered clusters are fewer than a minimum of 10 however many questions lack a cluster.
"""
from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace

import pytest

from core.records import RunInfo
from registration.seal import seal

from conftest import ROOT, cli, http_prereg
from support.scripted_server import ScriptedServer, Seen, Step, reply, verdict

pytestmark = pytest.mark.integration

ARMS = {"model-a": "alpha", "model-b": "beta"}
ANSWER = re.compile(r"Reply (alpha|beta) (\d\d)\.")
ITEM = re.compile(r"item (\d\d)")


def rubric(exp, hi: int) -> None:
    """A rubric of the experiment's own, sealed with it, scoring 0..hi."""
    (exp / "rubrics").mkdir(exist_ok=True)
    shutil.copy(ROOT / "rubrics" / "correctness.j2", exp / "rubrics" / "points.j2")
    text = (ROOT / "rubrics" / "correctness.toml").read_text()
    text = text.replace('name = "correctness"', 'name = "points"').replace('"correctness.j2"', '"points.j2"')
    text = text.replace("scale = [0, 1, 2]", f"scale = {list(range(hi + 1))}")
    text = text.replace("enum = [0, 1, 2]", f"enum = {list(range(hi + 1))}")
    (exp / "rubrics" / "points.toml").write_text(text)


def run_planted(tmp_path, planted: dict[str, list[int]], hi: int, margin: float, clusters: list[str | None],
                tags: list[str] | None = None, hypotheses: str | None = None):
    """`judge run` on len(clusters) questions, the judge scoring each arm's answer as planted on a 0..hi rubric;
    `hypotheses` replaces the one registered H1 (b vs a, all questions); returns (experiment, results folder,
    verify's result)."""
    exp, out = tmp_path / "exp", tmp_path / "out"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    with open(exp / "sets" / "exam.jsonl", "w") as f:
        for i, c in enumerate(clusters):
            f.write(json.dumps({"id": f"q{i:02d}", "question": f"What is item {i:02d}?", "reference": "It is.",
                                "tags": [tags[i]] if tags else [], **({"cluster": c} if c else {})}) + "\n")
    rubric(exp, hi)

    def script(seen: Seen) -> Step:
        if seen.model != "judge-model":
            item = ITEM.search(seen.prompt).group(1)
            return reply(f"Reply {ARMS[seen.model]} {item}.")
        arm, item = ANSWER.search(seen.prompt).groups()
        return verdict({"rationale": "Planted.", "score": planted[arm][int(item)], "harmful": False})

    models = "".join(f'[models.{m}]\nbackend = "openai"\nsource = "{m}"\nbase_url = "URL"\nfamily = "scripted"\n\n'
                     for m in ARMS)
    arms = "".join(f'[[arms]]\nname = "{arm}"\nmodel = "{m}"\nquants = ["served"]\n'
                   'generation = { temperature = 0.0, max_tokens = 64, seed = 0 }\n\n'
                   for arm, m in (("base", "model-a"), ("trained", "model-b")))
    with ScriptedServer(script, models=(*ARMS, "judge-model")) as server:
        text = http_prereg("rule", server.openai_url, (models + arms).replace("URL", server.openai_url),
                           [("H1", "base", "trained")])
        text = text.replace('[judge]\nrubric = "correctness"\n', '[judge]\nrubric = "points"\n')
        text = text.replace("margin = 0.10\n", f"margin = {margin}\n")
        text = text.replace("max_unscored = 0.10\n", "max_unscored = 0.10\ncalibration_sims = 40\n")
        if hypotheses:
            text = text[:text.index("[[hypotheses]]")] + hypotheses
        (exp / "prereg.toml").write_text(text)
        seal(exp)
        r = cli("judge", "run", "--exp", str(exp), "--arms", "--limit", str(len(clusters)), "--out", str(out),
                "--quiet", env={"OPENAI_API_KEY": "sentinel"}, timeout=600)
        assert r.returncode == 0, r.stderr
    return exp, out, cli("judge", "verify", str(out), timeout=600)


def comparisons(out) -> dict[str, dict]:
    return {c["id"]: c for c in json.loads((out / "numbers.json").read_text())["comparisons"]}


def check_reproduction(c: dict, hi: int, win: int, margin: float) -> None:
    assert (c["result"]["up"], c["result"]["ties"], c["result"]["n"]) == (1, 11, 12)
    assert c["result"]["diff"] == pytest.approx(win / 12)
    assert c["verdict"] == "not shown" and "non-inferiority not shown" in c["reason"]
    assert c["result"]["bound"] < -margin
    assert c["result"]["rule"] == "score" and c["result"]["scale"] == [0, hi, 1]


def test_eleven_ties_and_one_win_of_half_of_0_10_are_not_shown(tmp_path):
    """The reproduction: a 0-10 rubric, 12 questions, 11 ties and one +5, margin 0.5 was decided "non-inferior"
    (bound -0.447) by the default rule of the time, whose pseudo-loss was one point whatever the scale. The default
    rule now reads the rubric's scale: "not shown", as on 0-2 (below), and verify's second path agrees."""
    _, out, v = run_planted(tmp_path, {"alpha": [5] * 12, "beta": [5] * 11 + [10]}, 10, 0.5, [None] * 12)
    assert v.returncode == 0, v.stdout + v.stderr
    check_reproduction(comparisons(out)["H1"], 10, 5, 0.5)
    assert "the score test on the 0–10 scale" in (out / "report.md").read_text()


TWO_POINT = """[[hypotheses]]
id = "H1"
a = "base"
b = "trained"
quant = "served"
kind = "non_inferiority"
margin = 0.1
alpha = 0.025
subset = ["ties"]

[[hypotheses]]
id = "H2"
a = "base"
b = "trained"
quant = "served"
kind = "non_inferiority"
margin = 0.1
alpha = 0.025
subset = ["clustered"]
"""


@pytest.fixture(scope="module")
def two_point(tmp_path_factory):
    """One 0-2 run: H1 on 12 questions without clusters (11 ties, one +1); H2 on 3 clusters of 15 questions and 7
    questions without a cluster, every difference +1."""
    clusters = [None] * 12 + [f"c{i // 15}" for i in range(45)] + [None] * 7
    tags = ["ties"] * 12 + ["clustered"] * 52
    planted = {"alpha": [1] * 12 + [0] * 52, "beta": [1] * 11 + [2] + [1] * 52}
    return run_planted(tmp_path_factory.mktemp("two"), planted, 2, 0.1, clusters, tags, TWO_POINT)


def test_the_same_data_on_0_2_and_too_few_registered_clusters(two_point):
    """H1, the reproduction on 0-2 (one +1, margin 0.1): "not shown". H2: 10 resampling units but 3 registered
    clusters, fewer than the minimum of 10: inconclusive, with the reason. verify agrees with both."""
    _, out, v = two_point
    assert v.returncode == 0, v.stdout + v.stderr
    c = comparisons(out)
    h2 = c["H2"]
    assert h2["verdict"] == "inconclusive", h2["reason"]
    check_reproduction(c["H1"], 2, 1, 0.1)
    assert h2["verdict"] == "inconclusive" and h2["clusters"] == 3 and h2["result"]["units"] == 10
    assert ("only 3 cluster(s) of questions (7 question(s) without a cluster are units of their own, not clusters), "
            "fewer than the registered minimum of 10") in h2["reason"]
    assert h2["reason"].endswith("the statistic alone would say: superior")
    assert "cluster bootstrap over 10 units (3 registered clusters and 7 questions without a cluster)" in (
        out / "report.md").read_text()


def test_a_folder_decided_by_the_previous_default_fails_verify_until_judge_run_redecides_it(two_point):
    """A folder whose registration names no rule, decided by the previous default (`bootstrap_and_t`): verify
    recomputes with the registered rule only, names the cause and the remedy; `judge run` into the folder, with no
    model reachable, re-decides it without a call, and verify passes."""
    from judge.gold.sources import run_gold
    from judge.numbers.analysis import compute_numbers, write_numbers
    from judge.outputs.report import folder_report
    from registration.prereg import load_experiment
    from registration.questions import load_questions

    exp_dir, out, _ = two_point
    # first, an edited score statistic is named by both paths (the second recomputes it with judge.verify.second_path)
    edited = json.loads((out / "numbers.json").read_text())
    edited["comparisons"][0]["result"]["tests"][0]["statistic"] += 0.01
    (out / "numbers.json").write_text(json.dumps(edited, indent=1))
    bad = cli("judge", "verify", str(out), timeout=600)
    assert bad.returncode == 1
    field = "comparisons[H1].result.tests[lower -0.1].statistic"
    lines = [line for line in bad.stderr.splitlines() if f"numbers.json {field} = " in line]
    assert any("but the recomputation from raw files gives" in line for line in lines), bad.stderr
    assert any("but the independent plain-Python recomputation gives" in line for line in lines), bad.stderr

    exp = load_experiment(exp_dir)
    old = replace(exp, analysis=replace(exp.analysis, rule="bootstrap_and_t"))
    run = json.loads((out / "run.json").read_text())
    numbers = compute_numbers(old, load_questions(exp.set_paths()), out, RunInfo.from_dict(run, "run.json"),
                              run_gold(old, out))
    write_numbers(numbers, out / "numbers.json")
    (out / "report.md").write_text(folder_report(out))
    raw = {name: (out / name).read_bytes() for name in ("answers.jsonl", "judgments.jsonl", "blinding.jsonl")}

    bad = cli("judge", "verify", str(out), timeout=600)
    assert bad.returncode == 1
    assert ("numbers.json: decided by rule bootstrap_and_t, but the registration's rule is 'score' (the default when "
            "[analysis] names none") in bad.stderr
    assert "`judge run` into the folder re-decides it without any model call" in bad.stderr

    again = cli("judge", "run", "--exp", str(exp_dir), "--arms", "--limit", "64", "--out", str(out), "--quiet",
                env={"OPENAI_API_KEY": "sentinel"}, timeout=600)  # the server is gone: a model call would fail
    assert again.returncode == 0, again.stderr
    assert {name: (out / name).read_bytes() for name in raw} == raw
    assert comparisons(out)["H1"]["result"]["rule"] == "score"
    ok = cli("judge", "verify", str(out), timeout=600)
    assert ok.returncode == 0, ok.stdout + ok.stderr
