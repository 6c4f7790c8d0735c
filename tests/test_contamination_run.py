"""Each hypothesis about an arm trained on the registered training data decided again on the clean questions,
through `judge run` and `judge verify`, on planted verdicts (a ScriptedServer on 127.0.0.1 reached through the
official openai SDK, as in tests/test_rule_run.py): the expected verdicts are planted facts."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from registration.seal import seal

from conftest import ROOT, cli, http_prereg
from support.scripted_server import ScriptedServer, reply, verdict

pytestmark = pytest.mark.integration


def jsonl_file(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

ITEM = re.compile(r"item (\d\d)")
ANSWER = re.compile(r"Reply (alpha|beta) (\d\d)\.")
PLANTED_SEEN = range(6)  # the training log holds questions q00..q05 verbatim


def planted_run(tmp_path, decide: str, edit=lambda text: text):
    """`judge run` on 12 questions whose first six the training log holds verbatim: on those the judge scores trained
    2 and base 0, on the other six both 1; H1 registers trained superior to base. The run is refused until the
    contamination record exists (`edit`: a change to the registration's text). Returns the results folder."""
    exp, out = tmp_path / "exp", tmp_path / "out"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    jsonl_file(exp / "sets" / "exam.jsonl", [{"id": f"q{i:02d}", "question": f"What is item {i:02d}?",
                                              "reference": "It is."} for i in range(12)])
    jsonl_file(exp / "training" / "planted.jsonl", [{"prompt": f"What is item {i:02d}?",
                                                     "completion": f"Item {i:02d}."} for i in PLANTED_SEEN])
    arms = {"model-a": "alpha", "model-b": "beta"}
    score = {"alpha": [0 if i in PLANTED_SEEN else 1 for i in range(12)],
             "beta": [2 if i in PLANTED_SEEN else 1 for i in range(12)]}

    def script(seen):
        if seen.model != "judge-model":
            return reply(f"Reply {arms[seen.model]} {ITEM.search(seen.prompt).group(1)}.")
        arm, item = ANSWER.search(seen.prompt).groups()
        return verdict({"rationale": "Planted.", "score": score[arm][int(item)], "harmful": False})

    models = "".join(f'[models.{m}]\nbackend = "openai"\nsource = "{m}"\nbase_url = "URL"\nfamily = "scripted"\n\n'
                     for m in arms)
    models += "".join(f'[[arms]]\nname = "{arm}"\nmodel = "{m}"\nquants = ["served"]\n'
                      'generation = { temperature = 0.0, max_tokens = 64, seed = 0 }\n\n'
                      for arm, m in (("base", "model-a"), ("trained", "model-b")))
    record = tmp_path / "contamination" / "contamination.json"
    with ScriptedServer(script, models=(*arms, "judge-model")) as server:
        text = http_prereg("contaminated", server.openai_url, models.replace("URL", server.openai_url),
                           [("H1", "base", "trained")])
        text = text.replace('kind = "non_inferiority"\nmargin = 0.10', 'kind = "superiority"\nmargin = 0.0')
        text = text.replace("max_unscored = 0.10\n", "max_unscored = 0.10\ncalibration_sims = 20\n")
        text += (f'\n[contamination]\ntraining = ["training/planted.jsonl"]\narms = ["trained"]\n'
                 f'record = "{record}"\ndecide = "{decide}"\n')
        (exp / "prereg.toml").write_text(edit(text))
        seal(exp)
        run = ("judge", "run", "--exp", str(exp), "--arms", "--out", str(out), "--quiet")
        r = cli(*run, env={"OPENAI_API_KEY": "sentinel"}, timeout=600)
        assert r.returncode == 1 and "contamination record" in r.stderr and "missing" in r.stderr
        r = cli("audit", "contamination", "--exp", str(exp), "--quiet")
        assert r.returncode == 1 and "6 of 12 questions: q00, q01, q02, q03, q04, q05" in r.stderr
        r = cli(*run, env={"OPENAI_API_KEY": "sentinel"}, timeout=600)
        assert r.returncode == 0, r.stderr
    return out


def test_a_superior_trained_arm_that_wins_only_the_seen_questions_is_cautioned_and_verify_rederives_it(tmp_path):
    """On all questions trained is superior (six wins of two points, six ties: the score rule's bound on 0-2 clears 0
    at n = 12); on the clean ones every pair is a tie, so "superior" is not shown there, and the report cautions.
    Both of verify's paths derive the section again; an edit of it is a finding."""
    out = planted_run(tmp_path, "both")
    numbers = json.loads((out / "numbers.json").read_text())
    [h1] = numbers["comparisons"]
    assert h1["verdict"] == "superior" and h1["result"]["up"] == 6 and h1["result"]["ties"] == 6
    section = numbers["contamination"]
    assert section["contaminated"] == [f"q{i:02d}" for i in PLANTED_SEEN]
    [clean] = section["comparisons"]
    assert clean["paired_questions"] == [f"q{i:02d}" for i in range(6, 12)] and clean["result"]["diff"] == 0
    assert (clean["verdict"], clean["all_questions_verdict"], clean["differs"]) == ("not shown", "superior", True)
    report = (out / "report.md").read_text()
    assert "CAUTION: H1 on the 6 clean questions paired: not shown (all questions: superior)" in report
    assert "6 of 12 questions contaminated (q00, q01, q02, q03, q04, q05)" in report
    v = cli("judge", "verify", str(out), timeout=600)
    assert v.returncode == 0, v.stdout + v.stderr

    for edit, finding in ((lambda s: s["contaminated"].pop(), "contamination.contaminated"),
                          (lambda s: s["comparisons"][0].update(verdict="superior", differs=False),
                           "contamination.comparisons[H1].verdict")):
        edited = json.loads(json.dumps(numbers))
        edit(edited["contamination"])
        (out / "numbers.json").write_text(json.dumps(edited, indent=1) + "\n")
        v = cli("judge", "verify", str(out), timeout=600)
        said = v.stdout + v.stderr
        assert v.returncode == 1 and finding in said, said
        assert "independent plain-Python recomputation" in said and "recomputation from raw files" in said


def test_clean_only_decides_the_trained_arms_hypothesis_without_the_seen_questions(tmp_path):
    """Registered decide = "clean_only": H1 itself is decided on the six clean questions, all ties: "not shown", and
    verify's two paths agree."""
    out = planted_run(tmp_path, "clean_only")
    numbers = json.loads((out / "numbers.json").read_text())
    [h1] = numbers["comparisons"]
    assert h1["paired_questions"] == [f"q{i:02d}" for i in range(6, 12)]
    assert h1["verdict"] == "not shown" and h1["result"]["diff"] == 0 and h1["result"]["n"] == 6
    assert numbers["contamination"]["comparisons"] == [] and numbers["contamination"]["decide"] == "clean_only"
    assert "every hypothesis about trained is decided without the 6 contaminated question(s)" in (
        out / "report.md").read_text()
    v = cli("judge", "verify", str(out), timeout=600)
    assert v.returncode == 0, v.stdout + v.stderr
