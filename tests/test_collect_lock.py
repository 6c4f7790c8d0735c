"""`arms collect` takes the results folder's lock and binding as `judge run` does: two writers never meet.

Real processes against the scripted server on 127.0.0.1, which holds the first writer's answers open (a few
seconds each) so the second command starts while the first is mid-collection.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from test_folder import ENV, SERVED, Script, experiment, lines

from core import jsonl
from core.records import ANSWER_KEY

from conftest import ROOT, cli
from support.scripted_server import ScriptedServer

pytestmark = pytest.mark.integration

COMMANDS = {"judge run": ("judge", "run", "--quiet"), "arms collect": ("arms", "collect", "--quiet")}


@pytest.fixture
def server():
    with ScriptedServer(Script(), models=SERVED) as s:
        yield s


def command(name: str, exp, out, *args: str) -> list[str]:
    return [*COMMANDS[name], "--exp", str(exp), "--out", str(out), *args]


def test_a_collect_holds_the_folder_against_every_writer_and_binds_it_for_a_run(server, tmp_path):
    """While `arms collect` writes a folder, a `judge run` and a second `arms collect` into it are refused at once,
    naming it (a collect while a run writes: tests/test_folder.py); each answer is paid for once. The collect
    bound what answers depend on: a `judge run` into the folder then judges those answers without asking them
    again and binds the rest, verify passes, and a collect that would drop an arm is refused."""
    exp = experiment(tmp_path, server.openai_url)
    out = tmp_path / "out"
    state = server.script
    state.fast, state.slow = 1, 5.0  # the collect holds the folder while the others try
    scope = ("--arms", "base,trained", "--limit", "3")
    proc = subprocess.Popen([sys.executable, "-m", *command("arms collect", exp, out, *scope)], cwd=ROOT,
                            env={**os.environ, **ENV}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    refused = []
    try:
        deadline = time.time() + 120
        while not lines(out / "answers.jsonl") and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        for second in ("judge run", "arms collect"):
            t0 = time.monotonic()
            refused.append((second, cli(*command(second, exp, out, *scope), env=ENV, timeout=120),
                            time.monotonic() - t0))
        assert proc.poll() is None, "the collect finished before the others tried: the test proves nothing"
        state.slow = 0.0  # let it finish
    finally:
        _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    for second, r, took in refused:
        assert r.returncode == 2, (second, r.stderr)
        assert f"run.lock: another `arms collect` is writing this results folder (pid {proc.pid} on host" in \
            r.stderr, (second, r.stderr)
        assert took < 30
    assert len(lines(out / "answers.jsonl")) == 6 and len(jsonl.current(out / "answers.jsonl", ANSWER_KEY)) == 6
    assert state.answer_calls == 6  # each answer paid for once

    bound = json.loads((out / "binding.json").read_text())
    assert "judges" not in bound["registration"] and bound["scope"] == {"arms": ["base", "trained"], "limit": 3}
    r = cli(*command("judge run", exp, out, *scope), env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    assert state.answer_calls == 6  # the collected answers are judged, not asked again
    assert json.loads((out / "binding.json").read_text())["registration"]["judges"] == "openai"
    assert cli("judge", "verify", str(out)).returncode == 0
    # a collect into the judged folder checks only what answers depend on (the judges it does not bind are not
    # "absent now"), and refuses to drop an arm
    r = cli(*command("arms collect", exp, out, "--arms", "base", "--limit", "3"), env=ENV, timeout=120)
    assert r.returncode == 2 and "this run leaves out trained" in r.stderr, r.stderr
    assert "absent now" not in r.stderr and state.answer_calls == 6
