"""The experiment's own code runs contained (arms.contained): a glue run again row after row in one child process,
its model calls answered by this process; an exit, a crash or a hang there is an outcome naming what happened, and
this process goes on. (The gold program's cases: tests/test_gold.py.)"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from arms.contained import GlueSession
from core.errors import BadInput
from models.backends.base import Reply
from registration.seal import seal

pytestmark = pytest.mark.unit

# what the glue does when the model's reply is "stop", and the words its outcome must carry
STOPS = {
    "SystemExit": ("raise SystemExit(0)", "exited (SystemExit(0))"),
    "os._exit": ("os._exit(0)", "ended the process (exit status 0)"),
    "hang": ("while True:\n            pass", "did not finish within its time limit of 1 s"),
    "abort": ("os.abort()", "crashed (SIGABRT"),
    "segfault": ("ctypes.string_at(0)", "crashed (SIGSEGV"),
}


def glue_source(stop: str) -> str:
    return f"""import ctypes
import os

from arms.glue import GlueResult


def answer(question, call_model, experiment_dir):
    reply = call_model([("user", question)])
    if reply.text == "stop":
        {stop}
    if reply.text == "raise":
        raise ValueError("cannot read this")
    if reply.text == "pid":
        return GlueResult(str(os.getpid()))
    return GlueResult(question + ": " + reply.text.upper())
"""


def sealed_glue(tmp_path: Path, source: str) -> Path:
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "prereg.toml").write_text("")
    (exp / "glue.py").write_text(source)
    seal(exp)
    return exp


def reply(text: str) -> Reply:
    return Reply(text, "stop", 0, 0, 0.0)


@pytest.mark.parametrize("how", list(STOPS))
def test_a_glue_that_exits_hangs_or_crashes_on_a_row_stops_the_session_naming_it(tmp_path, how):
    limit = 1 if how == "hang" else 30  # seconds: short only where the glue hangs
    session = GlueSession("glue.py:answer", sealed_glue(tmp_path, glue_source(STOPS[how][0])), limit)
    try:
        asked = []
        first = session.run("q1", lambda messages: asked.append(messages) or reply("fine"))
        assert (first.kind, first.value) == ("answer", "q1: FINE") and asked == [[("user", "q1")]]
        assert session.run("q2", lambda m: None).kind == "unanswered"  # no reply: the glue sees Unanswered
        raised = session.run("q3", lambda m: reply("raise"))
        assert (raised.kind, raised.value) == ("raised", "ValueError: cannot read this")
        stopped = session.run("q4", lambda m: reply("stop"))
        assert stopped.kind == "stopped" and STOPS[how][1] in stopped.value, stopped
        later = session.run("q5", lambda m: reply("fine"))  # never run: the session is over, and says why
        assert later.kind == "skipped" and STOPS[how][1] in later.value
    finally:
        session.close()


def test_every_row_runs_in_the_same_child_process(tmp_path):
    session = GlueSession("glue.py:answer", sealed_glue(tmp_path, glue_source("pass")), 30)
    try:
        pids = {session.run(f"q{i}", lambda m: reply("pid")).value for i in range(5)}
    finally:
        session.close()
    assert len(pids) == 1 and int(pids.pop()) != os.getpid()


@pytest.mark.parametrize("top, words", [
    ("import sys\nsys.exit(0)\n", "exited (SystemExit(0)) while being imported"),
    ("import os\nos._exit(3)\n", "ended the process (exit status 3) while being imported"),
])
def test_a_glue_that_exits_while_imported_stops_its_first_row_and_skips_the_rest(tmp_path, top, words):
    session = GlueSession("glue.py:answer", sealed_glue(tmp_path, top + glue_source("pass")), 30)
    outcomes = [session.run(q, lambda m: reply("fine")) for q in ("q1", "q2")]
    assert [(o.kind, words in o.value) for o in outcomes] == [("stopped", True), ("skipped", True)], outcomes


def test_a_glue_that_cannot_be_imported_here_is_bad_input(tmp_path):
    exp = sealed_glue(tmp_path, glue_source("pass"))
    with pytest.raises(BadInput, match="nope"):
        GlueSession("glue.py:nope", exp, 30)
    (exp / "glue.py").write_text(glue_source("pass") + "\n# edited after sealing\n")
    with pytest.raises(BadInput, match="changed after sealing"):
        GlueSession("glue.py:answer", exp, 30)
