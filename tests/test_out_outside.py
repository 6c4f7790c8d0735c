"""`--out` at or inside the experiment folder is refused before anything is written, for every command that takes
it: results written into the sealed folder would change it, and every later run of it would be refused.

Each command runs in process (its `main`, as `python -m` runs it) on a copy of the sealed demo; the exit is 2, the
message names the option and both paths, and the folder still verifies against its seal with no file added.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from arms.__main__ import main as arms_main
from audit.__main__ import main as audit_main
from judge.__main__ import main as judge_main
from registration.seal import sealed_files, verify_seal

from conftest import ROOT

pytestmark = pytest.mark.unit


@pytest.fixture
def exp(tmp_path) -> Path:
    d = tmp_path / "demo"
    shutil.copytree(ROOT / "sealed" / "demo", d)
    return d


# (command line with EXP for the experiment folder and OUT for the --out value, the --out value relative to EXP)
COMMANDS = {
    "judge run": (judge_main, ["run", "--exp", "EXP", "--out", "OUT", "--quiet"]),
    "arms collect": (arms_main, ["collect", "--exp", "EXP", "--out", "OUT", "--quiet"]),
    "judge export": (judge_main, ["export", "RESULTS", "--out", "OUT"]),  # the sealed folder found from the path
    "judge export --exp": (judge_main, ["export", "RESULTS", "--exp", "EXP", "--out", "OUT"]),
    "judge view": (judge_main, ["view", "RESULTS", "--out", "OUT"]),
    "judge view --exp": (judge_main, ["view", "RESULTS", "--blind", "--exp", "EXP", "--out", "OUT"]),
    "judge publish": (judge_main, ["publish", "RESULTS", "--out", "OUT"]),
    "audit top40": (audit_main, ["top40", "--rewards", "RESULTS", "--out", "OUT"]),  # the sealed folder found
    "audit rewards": (audit_main, ["rewards", "RESULTS", "--out", "OUT"]),
}
TARGETS = {"the folder": ".", "a subfolder": "results/run", "a file in it": "sets/out.csv"}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("command", COMMANDS)
def test_out_inside_the_experiment_folder_is_refused_naming_both(command, target, exp, tmp_path, capsys):
    main, argv = COMMANDS[command]
    before = sorted(sealed_files(exp))
    out = exp / TARGETS[target]
    args = [{"EXP": str(exp), "OUT": str(out), "RESULTS": str(tmp_path / "results")}.get(a, a) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out: ") and str(out) in err and f"inside the experiment folder {exp}" in err, err
    verify_seal(exp)  # still exactly as sealed
    assert sorted(sealed_files(exp)) == before and not (exp / "results").exists()


@pytest.mark.parametrize("command", ["judge run", "arms collect"])
def test_a_link_into_the_experiment_folder_is_refused_too(command, exp, tmp_path, capsys):
    main, argv = COMMANDS[command]
    link = tmp_path / "looks-outside"
    os.symlink(exp, link)
    out = link / "run"
    assert main([{"EXP": str(exp), "OUT": str(out)}.get(a, a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out: ") and str(out) in err and "inside the experiment folder" in err, err
    verify_seal(exp)


def test_out_beside_the_experiment_folder_is_not_refused_for_it(exp, tmp_path, capsys):
    """A sibling whose name starts like the folder's is outside it: the command goes on to its own check (here the
    results folder to export is missing)."""
    out = exp.parent / f"{exp.name}-export.csv"
    assert judge_main(["export", str(tmp_path / "results"), "--exp", str(exp), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--out" not in err and "results" in err, err
