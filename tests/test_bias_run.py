"""Judge biases end to end, against scripted HTTP judges: a panel of an unrelated judge and a judge of the trained
arm's family that adds one point to every answer of that arm, and test-retest re-asks that the unrelated judge
answers differently on a seeded third.

The decision line carries both judges' estimates, the same-family judge's lift and a self-preference caution;
`judge verify` passes the folder and fails it once the lift is edited; the flip rate is the share of re-asks the
server flipped (a planted fact counted at the server) and lies within sampling error of 1/3; the family adjustment
is on the decision line and in numbers.json. A resumed run asks nothing again, retests included.
"""
from __future__ import annotations

import json
import math
import random
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registration.seal import seal

from conftest import ROOT, cli, http_prereg
from support.forgery import reanalyse, records, rewrite
from support.scripted_server import ScriptedServer, Seen, Step, reply, verdict

pytestmark = pytest.mark.integration
ENV = {"OPENAI_API_KEY": "sk-test"}


def _prereg(url: str) -> str:
    text = http_prereg("bias", f"{url}/v1", f"""[models.kin]
backend = "openai"
source = "kin-model"
base_url = "{url}/v1"
family = "fam-b"

[models.arm-a]
backend = "openai"
source = "arm-a"
base_url = "{url}/v1"
family = "fam-a"

[models.arm-b]
backend = "openai"
source = "arm-b"
base_url = "{url}/v1"
family = "fam-b"

[[arms]]
name = "alpha"
model = "arm-a"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 64, seed = 0 }}

[[arms]]
name = "beta"
model = "arm-b"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 64, seed = 0 }}
""", [("H1", "alpha", "beta")])
    text = text.replace('attempts = 2\n\n[judges.openai]', 'attempts = 2\npanel = "all-available"\nretest = 80\n\n'
                        '[judges.openai]')
    return text.replace('requires_env = "OPENAI_API_KEY"\n\n[analysis]',
                        'requires_env = "OPENAI_API_KEY"\n\n[judges.kin]\nmodel = "kin"\n'
                        'requires_env = "OPENAI_API_KEY"\n\n[analysis]')


class Script:
    """Arms answer "alpha qNN answer." / "beta qNN answer."; the judge of beta's family gives beta 2 and alpha 1;
    the unrelated judge gives 1 to every answer, and a re-ask of a verdict it gave before is flipped to 2 with
    probability 1/3 (seeded); the flips are counted here."""

    def __init__(self):
        self.asked: set[str] = set()
        self.rng = random.Random(2026)
        self.reasks = self.flips = 0

    def __call__(self, seen: Seen) -> Step:
        if seen.model in ("arm-a", "arm-b"):
            qid = json.loads(next(line for line in (ROOT / "sealed/demo/sets/exam.jsonl").read_text().splitlines()
                                  if json.loads(line)["question"] in seen.prompt))["id"]
            return reply(f"{'alpha' if seen.model == 'arm-a' else 'beta'} {qid} answer.")
        if seen.model == "kin-model":
            return verdict({"rationale": "r", "score": 2 if "beta q" in seen.prompt else 1, "harmful": False})
        score = 1
        if seen.prompt in self.asked:
            self.reasks += 1
            if self.rng.random() < 1 / 3:
                self.flips += 1
                score = 2
        self.asked.add(seen.prompt)
        return verdict({"rationale": "r", "score": score, "harmful": False})


@pytest.fixture(scope="module")
def biased(tmp_path_factory):
    root = tmp_path_factory.mktemp("bias")
    exp = root / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    script = Script()
    env = {**ENV, "BLINDEVAL_CACHE": str(root / "cache")}
    with ScriptedServer(script, models=("arm-a", "arm-b", "judge-model", "kin-model")) as server:
        (exp / "prereg.toml").write_text(_prereg(server.url))
        seal(exp)
        out = root / "run"
        args = ("judge", "run", "--exp", str(exp), "--arms", "--out", str(out), "--quiet")
        r = cli(*args, env=env, timeout=600)
        assert r.returncode in (0, 1), r.stderr
        calls = len(server.seen)
        again = cli(*args, env=env, timeout=600)  # resumed: every answer, verdict and retest is already there
        assert again.returncode == r.returncode and len(server.seen) == calls, again.stderr
        yield out, script, env


def test_the_decision_line_shows_both_estimates_the_lift_and_the_caution_and_verify_checks_the_lift(biased, tmp_path):
    out, _, env = biased
    c = json.loads((out / "numbers.json").read_text())["comparisons"][0]
    sp = c["self_preference"]
    # planted: the unrelated judge scores both arms 1 (difference 0), the kin judge gives beta one point more
    assert sp["judges"]["openai"]["estimate"] == 0 and sp["judges"]["kin"]["estimate"] == 1
    assert sp["judges"]["kin"]["shares_family"] and not sp["judges"]["openai"]["shares_family"]
    lift = sp["lifts"]["kin"]
    assert (lift["lift"], lift["ci_low"], lift["ci_high"], lift["n"]) == (1, 1, 1, 40)
    assert sp["judges"]["kin"]["verdict"] == "superior" and sp["judges"]["openai"]["verdict"] != "superior"
    report = (out / "report.md").read_text()
    assert "Judges: kin (fam-b, an arm's family) +1.000" in report and "openai (gpt) +0.000" in report
    assert "lift of kin over openai: +1.000" in report
    assert "**Self-preference caution:** judge kin shares the model family fam-b" in report
    assert "Family: Holm over 1 registered hypotheses: tested at one-sided α = 0.025" in report
    ok = cli("judge", "verify", str(out), env=env, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    edited = tmp_path / "edited"
    shutil.copytree(out, edited)
    numbers = json.loads((edited / "numbers.json").read_text())
    numbers["comparisons"][0]["self_preference"]["lifts"]["kin"]["lift"] = 0.5
    (edited / "numbers.json").write_text(json.dumps(numbers, indent=1) + "\n")
    bad = cli("judge", "verify", str(edited), env=env, timeout=300)
    assert bad.returncode != 0
    assert "self_preference.lifts.kin.lift = 0.5, but the independent plain-Python recomputation gives 1.0" in (
        bad.stdout + bad.stderr)


def test_each_judges_interval_resamples_the_demo_clusters_and_verify_recomputes_it(biased, tmp_path):
    """The demo's questions register clusters (10 clusters and 8 questions in the cluster "none"): each judge's
    interval and the lift resample the 11 clusters, and verify's own path names an edited per-judge interval."""
    out, _, env = biased
    sp = json.loads((out / "numbers.json").read_text())["comparisons"][0]["self_preference"]
    for v in [*sp["judges"].values(), sp["lifts"]["kin"]]:
        assert (v["resampling"], v["units"]) == ("clusters", 11)
    assert "Each judge's interval resamples whole clusters (kin: 11 units, openai: 11 units)" in (
        out / "report.md").read_text()
    edited = tmp_path / "edited"
    shutil.copytree(out, edited)
    numbers = json.loads((edited / "numbers.json").read_text())
    numbers["comparisons"][0]["self_preference"]["judges"]["kin"]["ci_low"] = 0.5
    (edited / "numbers.json").write_text(json.dumps(numbers, indent=1) + "\n")
    bad = cli("judge", "verify", str(edited), env=env, timeout=300)
    assert bad.returncode == 1
    assert ("self_preference.judges.kin.ci_low = 0.5, but the independent plain-Python recomputation gives 1.0"
            in bad.stdout + bad.stderr)


def test_a_judge_flipping_a_seeded_third_of_re_asks_has_a_flip_rate_near_one_third(biased):
    out, script, _ = biased
    rt = json.loads((out / "numbers.json").read_text())["judges"]["retest"]
    mine = rt["judges"]["openai"]
    assert mine["drawn"] == mine["n"] == script.reasks == 80
    assert mine["flips"] == script.flips  # the flips the server made, counted there
    assert abs(mine["flip_rate"] - 1 / 3) <= 3 * math.sqrt(1 / 3 * 2 / 3 / 80)
    assert mine["flip_ci95"][0] < 1 / 3 < mine["flip_ci95"][1]
    assert rt["judges"]["kin"]["flips"] == 0 and rt["judges"]["kin"]["kappa_quadratic"] == 1
    assert "- openai: 80 of 80 retests scored both times; flips" in (out / "report.md").read_text()


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_retest_verdict_its_raw_reply_does_not_give_fails_verify_naming_its_line(biased, tmp_path_factory, data):
    """A retest's score or status edited, and numbers.json and the report recomputed from the edited file as a
    careful forger would: verify re-parses the retest's stored raw reply and names the file, line and field."""
    out, _, env = biased
    edited = tmp_path_factory.mktemp("retest") / "run"
    shutil.copytree(out, edited)
    path = edited / "retests.jsonl"
    recs = records(path)
    line = data.draw(st.integers(1, len(recs)), label="line")
    r = recs[line - 1]
    field = data.draw(st.sampled_from(["score", "status"]), label="field")
    if field == "score":  # a score on the rubric's 0-2 scale the raw reply does not give
        r["score"] = data.draw(st.integers(0, 2).filter(lambda s: s != r["score"]), label="score")
    else:
        r["status"] = data.draw(st.sampled_from(["scored", "unscored", "error"]).filter(lambda s: s != r["status"]),
                                label="status")
    rewrite(path, recs)
    reanalyse(edited)
    bad = cli("judge", "verify", str(edited), env=env, timeout=300)
    assert bad.returncode == 1
    assert f"{path}:{line}: field {field!r}: reads {r[field]!r}, but the judge's raw reply" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(judge=st.sampled_from(["openai", "kin"]), field=st.sampled_from(["kappa_ci95", "flip_ci95"]),
       end=st.sampled_from([0, 1]), shift=st.floats(-0.5, 0.5).filter(lambda x: abs(x) > 1e-3))
def test_an_edited_end_of_a_retest_interval_is_named_by_verifys_own_path(biased, tmp_path_factory, judge, field, end,
                                                                          shift):
    """verify's own path (judge.verify.second_path.biases) recomputes each judge's test-retest kappa interval on the
    same documented resamples, and the flip rate's exact interval: an interval end moved is its finding, not only the
    main path's."""
    out, _, env = biased
    edited = tmp_path_factory.mktemp("kappa") / "run"
    shutil.copytree(out, edited)
    numbers = json.loads((edited / "numbers.json").read_text())
    ci = numbers["judges"]["retest"]["judges"][judge][field]
    ci[end] += shift
    (edited / "numbers.json").write_text(json.dumps(numbers, indent=1) + "\n")
    bad = cli("judge", "verify", str(edited), env=env, timeout=300)
    assert bad.returncode == 1
    assert (f"numbers.json judges.retest.judges.{judge}.{field} = {ci!r}, but the independent plain-Python "
            "recomputation gives") in bad.stderr, bad.stderr


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edit=st.sampled_from(["drop", "repeat", "rename", "style"]))
def test_a_caution_raised_or_dropped_against_the_evidence_is_named_by_verifys_own_path(biased, tmp_path_factory,
                                                                                       edit):
    """The planted judges disagree (kin "superior", openai not) and kin shares beta's family: one self-preference
    caution, for kin. verify's own path decides again which cautions are raised: one dropped, repeated or naming
    the other judge, or a style caution the style adjustment does not support, is its finding."""
    out, _, env = biased
    edited = tmp_path_factory.mktemp("caution") / "run"
    shutil.copytree(out, edited)
    numbers = json.loads((edited / "numbers.json").read_text())
    c = numbers["comparisons"][0]
    notes = c["self_preference"]["notes"]
    assert [n.split()[1] for n in notes] == ["kin"]
    if edit == "drop":
        notes.clear()
    elif edit == "repeat":
        notes.append(notes[0])
    elif edit == "rename":
        notes[0] = notes[0].replace("judge kin", "judge openai", 1)
    else:
        c["length_notes"] = [*c["length_notes"], "answer length is a rival explanation"]
    (edited / "numbers.json").write_text(json.dumps(numbers, indent=1) + "\n")
    bad = cli("judge", "verify", str(edited), env=env, timeout=300)
    assert bad.returncode == 1
    field = "length_notes" if edit == "style" else "self_preference.notes"
    assert f"numbers.json comparisons[H1].{field}: " in bad.stderr and "but verify's own path raises" in bad.stderr, (
        bad.stderr)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["judgments.jsonl", "retests.jsonl"]),
       score=st.integers(-5, 10).filter(lambda s: s not in (0, 1, 2)))
def test_a_score_off_the_rubric_scale_is_named_by_file_line_and_field_never_a_traceback(biased, tmp_path_factory,
                                                                                       name, score):
    """The demo rubric's scale is 0, 1, 2: a scored verdict reading another score was edited, and verify names it
    (file, line, field) where the main path would otherwise have crashed on it."""
    out, _, env = biased
    edited = tmp_path_factory.mktemp("scale") / "run"
    shutil.copytree(out, edited)
    path = edited / name
    recs = records(path)
    line = next(i for i, r in enumerate(recs, 1) if r["status"] == "scored" and r.get("kind", "single") == "single")
    recs[line - 1]["score"] = score
    rewrite(path, recs)
    bad = cli("judge", "verify", str(edited), env=env, timeout=300)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr, bad.stderr
    assert (f"the main path refuses the raw files: {path}:{line}: field 'score': reads {score}, which is not a point "
            "of the rubric's scale [0, 1, 2]") in bad.stderr, bad.stderr


def test_verify_decides_an_all_agree_panel_by_its_own_per_judge_verdicts(tmp_path):
    """Under `panel_rule = "all-agree"` the judges disagree (kin "superior", openai not): the decision is inconclusive,
    and verify's own path, which decides each judge, names a verdict edited to the primary judge's alone (in the
    family's tests too, which verify's path otherwise takes from the main path under a panel rule)."""
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    env = {**ENV, "BLINDEVAL_CACHE": str(tmp_path / "cache")}
    with ScriptedServer(Script(), models=("arm-a", "arm-b", "judge-model", "kin-model")) as server:
        (exp / "prereg.toml").write_text(_prereg(server.url).replace("retest = 80\n", 'panel_rule = "all-agree"\n'))
        seal(exp)
        out = tmp_path / "run"
        r = cli("judge", "run", "--exp", str(exp), "--arms", "--out", str(out), "--quiet", env=env, timeout=600)
        assert r.returncode in (0, 1), r.stderr
    c = json.loads((out / "numbers.json").read_text())["comparisons"][0]
    assert c["verdict"] == "inconclusive" and "panel rule all-agree: the judges disagree" in c["reason"]
    ok = cli("judge", "verify", str(out), env=env, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    numbers = json.loads((out / "numbers.json").read_text())
    c = numbers["comparisons"][0]
    c["verdict"] = c["self_preference"]["judges"]["openai"]["verdict"]  # the primary judge's alone, edited throughout
    for t in c["family"]["tests"]:
        t["verdict"] = c["verdict"]
    (out / "numbers.json").write_text(json.dumps(numbers, indent=1) + "\n")
    bad = cli("judge", "verify", str(out), env=env, timeout=300)
    assert bad.returncode == 1
    found = [line for line in (bad.stdout + bad.stderr).splitlines() if "comparisons[H1].verdict = " in line]
    assert any("but the independent plain-Python recomputation gives 'inconclusive'" in line for line in found), found
