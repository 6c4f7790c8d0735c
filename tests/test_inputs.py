"""Bad input: exit 2 with the file, line and field; never a traceback."""
from __future__ import annotations

import shutil

import pytest

from core.errors import BadInput
from models.files import gguf_info
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.seal import amend, seal, verify_seal

from conftest import cli


@pytest.mark.unit
def test_duplicate_question_id(tmp_path):
    p = tmp_path / "set.jsonl"
    p.write_text('{"id": "q1", "question": "a?"}\n{"id": "q2", "question": "b?"}\n{"id": "q1", "question": "c?"}\n')
    with pytest.raises(BadInput) as e:
        load_questions([p])
    assert "set.jsonl:3" in str(e.value) and "'id'" in str(e.value) and "duplicate" in str(e.value)


@pytest.mark.unit
def test_prereg_with_unknown_arm_in_hypothesis(demo_copy, tmp_path):
    exp = tmp_path / "demo"
    shutil.copytree(demo_copy, exp)
    p = exp / "prereg.toml"
    p.write_text(p.read_text().replace('b = "trained"\nquant = "Q8_0"', 'b = "tuned"\nquant = "Q8_0"', 1))
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert "prereg.toml" in str(e.value) and "'b'" in str(e.value) and "tuned" in str(e.value)


@pytest.mark.integration
def test_prereg_that_does_not_parse_exits_2(demo_copy, tmp_path):
    exp = tmp_path / "demo"
    shutil.copytree(demo_copy, exp)
    (exp / "prereg.toml").write_text("[experiment\nname = 1\n")
    seal(exp)
    r = cli("judge", "run", "--exp", str(exp), "--limit", "1")
    assert r.returncode == 2 and "prereg.toml" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.unit
def test_corrupt_gguf_is_bad_input(tmp_path):
    p = tmp_path / "broken.gguf"
    p.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(BadInput) as e:
        gguf_info(p)
    assert "broken.gguf" in str(e.value)


@pytest.mark.unit
def test_amendments_are_hash_chained(demo_copy, tmp_path):
    exp = tmp_path / "demo"
    shutil.copytree(demo_copy, exp)
    seal(exp)
    amend(exp, "first")
    amend(exp, "second")
    verify_seal(exp)
    p = exp / "amendments.jsonl"
    p.write_text(p.read_text().replace("first", "FIRST"))
    with pytest.raises(BadInput) as e:
        verify_seal(exp)
    assert "amendments.jsonl:2" in str(e.value)


@pytest.mark.unit
def test_added_file_breaks_the_seal(demo_copy, tmp_path):
    exp = tmp_path / "demo"
    shutil.copytree(demo_copy, exp)
    (exp / "sets" / "extra.jsonl").write_text('{"id": "x", "question": "?"}\n')
    with pytest.raises(BadInput) as e:
        verify_seal(exp)
    assert "extra.jsonl" in str(e.value) and "added after sealing" in str(e.value)


@pytest.mark.unit
def test_private_files_are_bound_by_hash_and_others_may_not_vanish(demo_copy, tmp_path):
    exp = tmp_path / "demo"
    shutil.copytree(demo_copy, exp)
    seal(exp, private=("kb/d10.md",))
    assert "private:kb/d10.md" in (exp / "MANIFEST").read_text()
    (exp / "kb" / "d10.md").unlink()
    verify_seal(exp)  # a private file may be kept out of the repository
    (exp / "kb" / "d10.md").write_text("a different text\n")
    with pytest.raises(BadInput) as e:
        verify_seal(exp)  # but when it is there, it must be the sealed one
    assert "d10.md" in str(e.value) and "changed after sealing" in str(e.value)
    (exp / "kb" / "d10.md").unlink()
    (exp / "kb" / "d09.md").unlink()
    with pytest.raises(BadInput) as e:
        verify_seal(exp)
    assert "d09.md" in str(e.value) and "removed after sealing" in str(e.value)


@pytest.mark.unit
def test_rubric_template_that_does_not_parse_or_render(tmp_path):
    from registration.rubric import RUBRICS_DIR, load_rubric

    d = tmp_path / "rubrics"
    shutil.copytree(RUBRICS_DIR, d)
    (d / "correctness.j2").write_text("Question: {{ question }}\n{% if %}\n")
    with pytest.raises(BadInput) as e:
        load_rubric("correctness", d)
    assert "correctness.j2:2" in str(e.value)
    (d / "correctness.j2").write_text("Question: {{ question }} {{ no_such_field }}\n")
    rubric = load_rubric("correctness", d)
    with pytest.raises(BadInput) as e:
        rubric.render(question="q", reference=None, answer="a")
    assert "correctness.toml" in str(e.value) and "no_such_field" in str(e.value)


@pytest.mark.integration
def test_unknown_quant_is_bad_input(demo_copy, tmp_path):
    exp = tmp_path / "demo"
    shutil.copytree(demo_copy, exp)
    p = exp / "prereg.toml"
    p.write_text(p.read_text().replace("Q4_K_M", "Q9_9"))
    seal(exp)
    r = cli("judge", "run", "--exp", str(exp), "--arms", "base", "--limit", "1", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "Q9_9" in r.stderr and "'quants'" in r.stderr and "Traceback" not in r.stderr
