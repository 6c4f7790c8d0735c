"""Panel rules are registered by name: declared to the parser once (registration.panel), decided by the main path
(judge.numbers.panel_rules) and again by verify's second path (judge.verify.second_path.panel_rules). Every declared
rule is accepted by the parser, has a twin in both paths, and a folder registered under it is decided by the main
path and passes `judge verify` (both paths agree on it), against the scripted judges of tests/test_bias_run.py."""
from __future__ import annotations

import json
import shutil

import pytest
from test_bias_run import ENV, Script, _prereg

from core.errors import BadInput
from judge.numbers import panel_rules as main_path
from judge.verify.second_path import panel_rules as second_path
from registration.panel import DEFAULT_PANEL_RULE, PANEL_RULES
from registration.prereg import load_experiment
from registration.seal import seal

from conftest import ROOT, cli
from support.scripted_server import ScriptedServer

RULES = list(PANEL_RULES)


@pytest.mark.unit
def test_the_three_registries_name_the_same_rules():
    assert DEFAULT_PANEL_RULE in RULES and len(RULES) >= 3
    assert list(main_path.PANEL_RULES) == RULES == list(second_path.PANEL_RULES)


@pytest.mark.unit
@pytest.mark.parametrize("rule", RULES)
def test_every_declared_rule_is_accepted_by_the_parser(tmp_path, rule):
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    text = (exp / "prereg.toml").read_text()
    (exp / "prereg.toml").write_text(text.replace("\n[judge]\n", f'\n[judge]\npanel_rule = "{rule}"\n', 1))
    assert load_experiment(exp).judge_panel_rule == rule


@pytest.mark.unit
def test_an_undeclared_rule_is_refused_naming_the_declared_ones(tmp_path):
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    text = (exp / "prereg.toml").read_text()
    (exp / "prereg.toml").write_text(text.replace("\n[judge]\n", '\n[judge]\npanel_rule = "majority"\n', 1))
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert e.value.field == "panel_rule" and all(repr(r) in str(e.value) for r in RULES)


@pytest.mark.integration
@pytest.mark.parametrize("rule", RULES)
def test_a_folder_under_every_rule_is_decided_by_the_main_path_and_verified_by_the_second(tmp_path, rule):
    """Two judges (one of the trained arm's family, adding a point to its answers), four questions: the run
    decides under the rule and `judge verify` finds nothing, so both paths decided it the same way."""
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    env = {**ENV, "BLINDEVAL_CACHE": str(tmp_path / "cache")}
    with ScriptedServer(Script(), models=("arm-a", "arm-b", "judge-model", "kin-model")) as server:
        (exp / "prereg.toml").write_text(_prereg(server.url).replace("retest = 80\n", f'panel_rule = "{rule}"\n'))
        seal(exp)
        out = tmp_path / "run"
        r = cli("judge", "run", "--exp", str(exp), "--arms", "--limit", "4", "--out", str(out), "--quiet", env=env,
                timeout=600)
        assert r.returncode in (0, 1), r.stderr
    numbers = json.loads((out / "numbers.json").read_text())
    assert numbers["panel_rule"] == rule and numbers["comparisons"][0]["self_preference"] is not None
    ok = cli("judge", "verify", str(out), env=env, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
