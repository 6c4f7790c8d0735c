"""User glue that raises: exit 2 naming the glue's file, line and the question; rows already written are kept."""
from __future__ import annotations

import json
import shutil

import pytest

from registration.seal import seal

from conftest import cli

pytestmark = pytest.mark.integration

GLUE = '''from arms.glue import GlueResult


def answer(question, call_model, experiment_dir):
    reply = call_model([("user", question.question)])
    if question.id == "q02":
        return GlueResult(reply.txt)   # a typo: Reply has `text`
    return GlueResult(reply.text)
'''


@pytest.mark.parametrize("form", ["module", "file"])
def test_a_glue_that_raises_is_the_users_fault_named_by_file_and_line(demo_copy, tmp_path, form):
    """As a module on PYTHONPATH ("buggyglue:answer") or a file in the experiment folder ("buggyglue.py:answer")."""
    exp = tmp_path / "demo"
    shutil.copytree(demo_copy, exp)
    where = (tmp_path if form == "module" else exp) / "buggyglue.py"
    where.write_text(GLUE)
    p = exp / "prereg.toml"
    registered = "buggyglue:answer" if form == "module" else "buggyglue.py:answer"
    p.write_text(p.read_text().replace('glue = "glue.py:answer"', f'glue = "{registered}"'))
    seal(exp)
    out = tmp_path / "out"
    r = cli("judge", "run", "--exp", str(exp), "--arms", "glue-base", "--limit", "2", "--out", str(out), "--quiet",
            env={"PYTHONPATH": str(tmp_path)} if form == "module" else None)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert f"{where.resolve()}:7" in r.stderr and "'glue'" in r.stderr
    assert "AttributeError" in r.stderr and "'q02'" in r.stderr and "reply.txt" in r.stderr
    rows = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert all(row["question_id"] != "q02" and row["status"] == "ok" for row in rows)
