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

from arms import jsonl
from arms.records import ANSWER_KEY

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


@pytest.mark.parametrize("first,seconds", [("judge run", ["arms collect"]),
                                           ("arms collect", ["judge run", "arms collect"])])
def test_a_second_writer_is_refused_at_once_naming_the_first(server, tmp_path, first, seconds):
    """(A second `judge run` during a run: tests/test_folder.py.)"""
    exp = experiment(tmp_path, server.openai_url)
    out = tmp_path / "out"
    state = server.script
    state.fast, state.slow = 1, 5.0  # the first writer holds the folder while the others try
    scope = ("--arms", "base,trained", "--limit", "3")
    proc = subprocess.Popen([sys.executable, "-m", *command(first, exp, out, *scope)], cwd=ROOT,
                            env={**os.environ, **ENV}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    refused = []
    try:
        deadline = time.time() + 120
        while not lines(out / "answers.jsonl") and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        for second in seconds:
            t0 = time.monotonic()
            refused.append((second, cli(*command(second, exp, out, *scope), env=ENV, timeout=120),
                            time.monotonic() - t0))
        assert proc.poll() is None, "the first writer finished before the others tried: the test proves nothing"
        state.slow = 0.0  # let it finish
    finally:
        _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    for second, r, took in refused:
        assert r.returncode == 2, (second, r.stderr)
        assert f"run.lock: another `{first}` is writing this results folder (pid {proc.pid} on host" in r.stderr, \
            (second, r.stderr)
        assert took < 30
    assert len(lines(out / "answers.jsonl")) == 6 and len(jsonl.current(out / "answers.jsonl", ANSWER_KEY)) == 6
    assert state.answer_calls == 6  # each answer paid for once


def test_collect_then_run_then_collect_share_one_binding(server, tmp_path):
    """`arms collect` binds what answers depend on; `judge run` into the folder resumes those answers and binds the
    rest; a later collect resumes too, and one that would drop what was bound is refused (one that would change
    it: tests/test_folder.py)."""
    exp = experiment(tmp_path, server.openai_url)
    out = tmp_path / "out"
    scope = ("--arms", "base,trained", "--limit", "2")
    assert cli(*command("arms collect", exp, out, *scope), env=ENV, timeout=120).returncode == 0
    bound = json.loads((out / "binding.json").read_text())
    assert "judges" not in bound["registration"] and bound["scope"] == {"arms": ["base", "trained"], "limit": 2}
    calls = server.script.answer_calls
    r = cli(*command("judge run", exp, out, *scope), env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    assert server.script.answer_calls == calls  # the collected answers are judged, not asked again
    assert json.loads((out / "binding.json").read_text())["registration"]["judges"] == "openai"
    assert cli("judge", "verify", str(out)).returncode == 0
    r = cli(*command("arms collect", exp, out, *scope), env=ENV, timeout=120)
    assert r.returncode == 0 and server.script.answer_calls == calls, r.stderr

    r = cli(*command("arms collect", exp, out, "--arms", "base", "--limit", "2"), env=ENV, timeout=120)
    assert r.returncode == 2 and "this run leaves out trained" in r.stderr, r.stderr
    assert server.script.answer_calls == calls and len(lines(out / "answers.jsonl")) == 4
