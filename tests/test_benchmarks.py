"""Every benchmark script still runs (quick mode). Figures come from full runs, in BENCHMARKS.md."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))


@pytest.mark.unit
def test_every_benchmark_is_listed_in_benchmarks_md():
    text = (ROOT / "BENCHMARKS.md").read_text()
    for name in SCRIPTS:
        assert f"benchmarks/{name}" in text, name


@pytest.mark.integration
@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_runs_in_quick_mode(script):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, f"benchmarks/{script}", "--quick"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout[r.stdout.index("{"):]
    assert json.loads(out)
