"""Rubric files as a class of inputs: any field of any type is loaded into a rubric the judge can use, or refused
naming the rubric file, the line and the field; a template is compiled when loaded, and a variable its judge does
not provide is refused at its line before any answer is paid for (judge.judging.preflight calls the check)."""
from __future__ import annotations

import json
import shutil
import tomllib

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_properties_registration import _deep, _get, _key, _paths, _value, dump, values

from core.errors import BadInput
from judge.judging.verdict import parse_verdict
from registration.rubric import RUBRICS_DIR, load_rubric

pytestmark = pytest.mark.unit

BASE = tomllib.loads((RUBRICS_DIR / "correctness.toml").read_text(encoding="utf-8"))


def _dump(doc: dict) -> tuple[str, dict[tuple, int]]:
    """The rubric as TOML: its tables ([schema], [schema.properties.score], [generation]) as headers."""
    flat = {k: v for k, v in doc.items() if k != "schema"}
    schema = doc.get("schema")
    text, where = dump(flat)
    lines = text.rstrip("\n").split("\n")
    if isinstance(schema, dict):
        lines.append("[schema]")
        where[("schema",)] = len(lines)
        props = schema.get("properties")
        for k, v in schema.items():
            if k == "properties" and isinstance(props, dict) and all(isinstance(p, dict) for p in props.values()):
                continue
            lines.append(f"{_key(k)} = {_value(v)}")
            where[("schema", k)] = len(lines)
        if isinstance(props, dict) and all(isinstance(p, dict) for p in props.values()):
            for name, spec in props.items():
                sub, _ = dump({"x": spec})
                lines.append(f"[schema.properties.{json.dumps(name)}]")
                where[("schema", "properties", name)] = len(lines)
                for key_line in sub.rstrip("\n").split("\n")[1:]:
                    lines.append(key_line)
                    where[("schema", "properties", name, key_line.split(" = ")[0].strip('"'))] = len(lines)
    elif schema is not None:
        lines.insert(0, dump({"schema": schema})[0].rstrip("\n"))
        where = {k: v + 1 for k, v in where.items()}
        where[("schema",)] = 1
    return "\n".join(lines) + "\n", where


def test_the_writer_round_trips_the_rubric():
    assert tomllib.loads(_dump(BASE)[0]) == BASE


@pytest.fixture(scope="module")
def rubrics(tmp_path_factory):
    d = tmp_path_factory.mktemp("rubrics")
    shutil.copy(RUBRICS_DIR / "correctness.j2", d / "correctness.j2")
    return d


@st.composite
def mutated(draw) -> tuple[dict, tuple]:
    doc = _deep(BASE)
    path = draw(st.sampled_from(_paths(doc)))
    parent = _get(doc, path[:-1])
    if draw(st.booleans()):
        parent[path[-1]] = draw(values)
    else:
        del parent[path[-1]]
    return doc, path


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated())
def test_any_field_of_any_type_loads_a_usable_rubric_or_is_refused_at_its_line(rubrics, case):
    doc, path = case
    try:
        text, where = _dump(doc)
        tomllib.loads(text)
    except (TypeError, tomllib.TOMLDecodeError):
        assume(False)
    (rubrics / "correctness.toml").write_text(text, encoding="utf-8")
    try:
        rubric = load_rubric("correctness", rubrics)
    except BadInput as e:
        assert e.file in (str(rubrics / "correctness.toml"), str(rubrics / "correctness.j2")), str(e)
        assert e.field, str(e)
        if path[-1] == e.field and path in where and e.line is not None:
            assert e.line == where[path], (str(e), path)
        return
    # what loads is usable: it renders, its schema is read by the parser, every verdict it accepts is on the scale
    rubric.render(question="q", reference=None, answer="a")
    for score in (*rubric.scale, -1, 10**9, "2", None, True):
        verdict = {name: score if name == rubric.score_field else "x" for name in rubric.schema["properties"]}
        parsed = parse_verdict(json.dumps(verdict), rubric.schema)
        if parsed.ok:
            assert int(parsed.fields[rubric.score_field]) in rubric.scale


@pytest.mark.parametrize("key, value", [
    ("scale", '"0-2"'), ("scale", "[2, 1, 0]"), ("scale", "[0, 1.5, 2]"), ("scale", "[0]"), ("scale", "[true, false]"),
    ("score_field", "3"), ("template", "{ a = 1 }"), ("bool_fields", '"harmful"'), ("name", "[1]"),
    ("template", '"../correctness.j2"'),
])
def test_a_top_level_field_of_the_wrong_type_is_refused_at_its_line(rubrics, key, value):
    text = (RUBRICS_DIR / "correctness.toml").read_text()
    lines = text.split("\n")
    no = next(i for i, line in enumerate(lines, 1) if line.startswith(f"{key} = "))
    lines[no - 1] = f"{key} = {value}"
    (rubrics / "correctness.toml").write_text("\n".join(lines))
    with pytest.raises(BadInput) as e:
        load_rubric("correctness", rubrics)
    assert (e.value.file, e.value.line, e.value.field) == (str(rubrics / "correctness.toml"), no, key), str(e.value)


@pytest.mark.parametrize("table, key, value", [
    ("[schema.properties.score]", "type", '"number"'), ("[schema.properties.score]", "enum", "[0, 1, 3]"),
    ("[schema.properties.score]", "enum", '"0,1,2"'), ("[schema.properties.harmful]", "type", "5"),
    ("[generation]", "max_tokens", '"many"'), ("[generation]", "temperature", "-1.0"),
])
def test_a_schema_or_generation_field_of_the_wrong_type_is_refused_at_its_line(rubrics, table, key, value):
    text = (RUBRICS_DIR / "correctness.toml").read_text()
    lines = text.split("\n")
    start = lines.index(table)
    no = next(i for i, line in enumerate(lines[start:], start + 1) if line.startswith(f"{key} = "))
    lines[no - 1] = f"{key} = {value}"
    (rubrics / "correctness.toml").write_text("\n".join(lines))
    with pytest.raises(BadInput) as e:
        load_rubric("correctness", rubrics)
    assert (e.value.line, e.value.field) == (no, key), str(e.value)


# ---- templates -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("template, line, says", [
    ("Question: {{ question }}\n{% if %}\n", 2, "does not parse"),
    ("Question: {{ question }}\n\n{{ answer | no_such_filter }}\n", 3, "no_such_filter"),
    ("{% for x in answer %}\n{{ x }}\n{% endfor\n", 3, "does not parse"),
])
def test_a_template_that_does_not_compile_is_refused_at_its_line(rubrics, template, line, says):
    shutil.copy(RUBRICS_DIR / "correctness.toml", rubrics / "correctness.toml")
    (rubrics / "correctness.j2").write_text(template)
    with pytest.raises(BadInput) as e:
        load_rubric("correctness", rubrics)
    assert (e.value.file, e.value.line, e.value.field) == (str(rubrics / "correctness.j2"), line, "template")
    assert says in e.value.message
    shutil.copy(RUBRICS_DIR / "correctness.j2", rubrics / "correctness.j2")


@pytest.mark.parametrize("template, provided, name, line", [
    ("{{ question }}\n{{ answr }}\n", {"question", "reference", "answer"}, "answr", 2),
    ("{{ question }}\n{% if reference %}\n{{ answer_1 }}\n{% endif %}\n", {"question", "reference", "answer"},
     "answer_1", 3),  # in a branch a first render with no reference would skip
    ("{{ answer }}\n", {"question", "reference", "answer_1", "answer_2"}, "answer", 1),  # a single rubric as pairwise
])
def test_a_template_variable_the_judge_does_not_provide_is_refused_at_its_line(rubrics, template, provided, name,
                                                                               line):
    shutil.copy(RUBRICS_DIR / "correctness.toml", rubrics / "correctness.toml")
    (rubrics / "correctness.j2").write_text(template)
    rubric = load_rubric("correctness", rubrics)
    with pytest.raises(BadInput) as e:
        rubric.check_variables(provided, "one answer")
    assert (e.value.file, e.value.line, e.value.field) == (str(rubrics / "correctness.j2"), line, name)
    rubric.check_variables(provided | {name}, "one answer")  # provided: nothing to refuse
    shutil.copy(RUBRICS_DIR / "correctness.j2", rubrics / "correctness.j2")


def test_the_shipped_rubrics_use_only_what_their_judges_provide():
    single, pair = {"question", "reference", "answer"}, {"question", "reference", "answer_1", "answer_2"}
    load_rubric("correctness").check_variables(single, "one answer")
    load_rubric("gaming").check_variables(single, "one answer")
    load_rubric("pairwise").check_variables(pair, "a pair of answers")
