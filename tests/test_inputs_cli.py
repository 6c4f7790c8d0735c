"""The input classes of tests/test_properties_registration.py and tests/test_sets.py through `judge run`, as a user
meets them: exit 2 with the file, the line and the field, no traceback, and nothing paid (no answers.jsonl, no
model call in the run's cache). One case per class; the classes themselves are tested in process."""
from __future__ import annotations

import json

import pytest
from test_validate import EXAM, PREREG, _line, assert_names, edit, experiment, refused

from registration.seal import seal

pytestmark = pytest.mark.integration


def test_a_prereg_that_is_not_utf8_is_refused_at_its_line(tmp_path):
    exp = experiment(tmp_path)
    raw = PREREG.replace("resamples = 10000", "resamples = 10000  # caf\xe9").encode("latin-1")
    (exp / "prereg.toml").write_bytes(raw)
    seal(exp)
    err = refused(exp, tmp_path)
    assert f"{exp / 'prereg.toml'}:{_line(PREREG, 'resamples = 10000')}:" in err and "not UTF-8" in err


@pytest.mark.parametrize("old, new, field", [
    ("resamples = 10000", "resamples = 10000000000", "resamples"),
    ("resamples = 10000", "resamples = 10000\ncalibration_sims = 100000000", "calibration_sims"),
    ("n_ctx = 2048", "n_ctx = 2048\nparallel_sequences = 100000", "parallel_sequences"),
    ('source = "gpt-4o-mini"', 'source = "gpt-4o-mini"\nbase_url = "localhost:8080/v1"', "base_url"),
])
def test_an_unbounded_count_or_a_bad_url_is_refused_before_anything_is_paid(tmp_path, old, new, field):
    text = edit(old, new)
    exp = experiment(tmp_path, text)
    assert_names(refused(exp, tmp_path), exp / "prereg.toml", _line(text, new.splitlines()[-1]), field)


def test_a_rubric_field_of_the_wrong_type_is_refused_at_its_line(tmp_path):
    from registration.rubric import RUBRICS_DIR

    exp = experiment(tmp_path)
    (exp / "rubrics").mkdir()
    for name in ("correctness.toml", "correctness.j2"):
        (exp / "rubrics" / name).write_text((RUBRICS_DIR / name).read_text())
    toml = (RUBRICS_DIR / "correctness.toml").read_text().replace("scale = [0, 1, 2]", 'scale = "0-2"')
    (exp / "rubrics" / "correctness.toml").write_text(toml)
    seal(exp)
    assert_names(refused(exp, tmp_path), exp / "rubrics" / "correctness.toml", _line(toml, 'scale = "0-2"'), "scale")


def test_a_template_variable_the_judge_does_not_provide_is_refused_before_any_answer(tmp_path):
    from registration.rubric import RUBRICS_DIR

    exp = experiment(tmp_path)
    (exp / "rubrics").mkdir()
    (exp / "rubrics" / "correctness.toml").write_text((RUBRICS_DIR / "correctness.toml").read_text())
    template = (RUBRICS_DIR / "correctness.j2").read_text().replace("{{ answer }}", "{{ answer }}\n{{ answr }}")
    (exp / "rubrics" / "correctness.j2").write_text(template)
    seal(exp)
    err = refused(exp, tmp_path, "--arms", "base", "--limit", "1")
    assert_names(err, exp / "rubrics" / "correctness.j2", _line(template, "{{ answr }}"), "answr")


def test_a_chat_template_that_does_not_parse_is_refused_naming_it(tmp_path):
    text = edit('family = "smollm2"', 'family = "smollm2"\nchat_template = "chat.jinja"')
    exp = experiment(tmp_path, text)
    (exp / "chat.jinja").write_text("{% for m in messages %}\n{{ m.content }\n{% endfor %}\n")
    seal(exp)
    err = refused(exp, tmp_path, "--arms", "base", "--limit", "1")
    assert_names(err, exp / "chat.jinja", 2, "chat_template")


def test_a_lone_surrogate_in_a_question_is_refused_at_its_line_and_field(tmp_path):
    lines = EXAM.splitlines()
    record = json.loads(lines[2])
    lines[2] = json.dumps({**record, "question": record["question"] + " \ud800"})  # json.dumps writes the escape
    exp = experiment(tmp_path, sets={"exam.jsonl": "\n".join(lines)})
    assert_names(refused(exp, tmp_path), exp / "sets" / "exam.jsonl", 3, "question")


def test_a_lone_surrogate_in_a_gold_labels_note_is_refused_at_its_line_and_field_before_anything_is_paid(tmp_path):
    gold = '[gold]\nprogram = "gold.py:score"\n'
    exp = experiment(tmp_path, edit(gold, gold + 'labels = ["gold/labels.jsonl"]\n'))
    record = {"type": "gold", "version": 1, "question_id": "q01", "answer_sha256": "0" * 64, "score": 2,
              "labeller": "expert", "time": "2026-11-30T12:00:00+00:00"}
    (exp / "gold").mkdir()
    (exp / "gold" / "labels.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(
        {**record, "question_id": "q02", "note": "half \ud800"}))  # no final newline: the last line still counts
    seal(exp)
    assert_names(refused(exp, tmp_path), exp / "gold" / "labels.jsonl", 2, "note")


@pytest.mark.parametrize("template, line, says", [
    ("{% for m in messages %}{{ m.content }}{% endfor %}\n{{ raise_exception('no system role, please') }}\n", 2,
     "no system role, please"),
    ("{% for m in messages %}\n{{ m.content | no_such_filter }}\n{% endfor %}\n", 2, "no_such_filter"),
    ("{{ messages[0].content.nope() }}\n", None, "nope"),
])
def test_a_chat_template_that_fails_on_a_prompt_is_bad_input_naming_it(tmp_path, template, line, says):
    """Every prompt of a run is counted through the chat template before the first call (arms.context): a template
    that raises, or uses a filter jinja2 does not have, stops there, naming the template file."""
    from arms.context import counter
    from core.errors import BadInput
    from models.spec import ModelSpec

    (tmp_path / "chat.jinja").write_text(template)
    model = ModelSpec(name="m", backend="llama-cpp", source="embedded:smollm2", chat_template="chat.jinja")
    with pytest.raises(BadInput) as e:
        counter(model, tmp_path)([("system", "Be brief."), ("user", "Hello?")])
    assert (e.value.file, e.value.field) == (str(tmp_path / "chat.jinja"), "chat_template") and says in str(e.value)
    assert line is None or e.value.line == line


def test_a_bad_csv_question_set_is_refused_at_its_row_and_column_before_anything_is_paid(tmp_path):
    """The demo's set as CSV under its own column names (written by pandas), one question's text spread over two
    lines, and a repeated id planted in the row after it: refused naming the file, the row's first line and the
    file's column; the seal lists the CSV file as any other."""
    import pandas as pd

    rows = [json.loads(line) for line in EXAM.splitlines() if line.strip()]
    frame = pd.DataFrame({"qid": [r["id"] for r in rows], "prompt": [r["question"] for r in rows],
                          "answer": [r.get("reference") for r in rows], "labels": [";".join(r["tags"]) for r in rows],
                          "topic": [r.get("cluster") for r in rows]})
    frame.loc[0, "prompt"] = frame.loc[0, "prompt"] + "\n(asked in two lines)"
    frame.loc[1, "qid"] = frame.loc[0, "qid"]
    prereg = edit('sets = ["sets/exam.jsonl"]', 'sets = ["sets/exam.csv"]\n\n[sets."sets/exam.csv"]\n'
                  'columns = { id = "qid", question = "prompt", reference = "answer", tags = "labels", '
                  'cluster = "topic" }')
    exp = experiment(tmp_path, prereg, {"exam.csv": frame.to_csv(index=False)})
    assert "sets/exam.csv" in (exp / "MANIFEST").read_text()
    # header on line 1, the first question on lines 2 and 3: the repeated id's row starts on line 4
    assert_names(refused(exp, tmp_path), exp / "sets" / "exam.csv", 4, "qid")
