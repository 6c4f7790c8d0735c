"""Rubrics: a TOML file (scale, verdict schema, system text) plus a jinja2 template for the prompt.

Rendering uses a sandboxed jinja2 environment, and questions and answers are passed only as
variables: an answer containing `{{ 7*7 }}` is shown literally, never evaluated.

Everything the judge later reads from a rubric is checked when it is loaded, before any answer is paid for:
each field's type (file, line and field named), the template's syntax and filters (it is compiled), the
verdict schema as judge.judging.verdict reads it, and a score field whose values lie on the scale. Which variables
the template may use depends on what it judges (one answer or a pair): `check_variables` refuses any other,
at its line, and judge.judging.preflight calls it for every rubric of the run.

`answer_first` asks the judge for its own answer to the question before it grades a candidate
(judge.judging.answer_first): `two_calls`, a first call that never shows the candidate, or `one_reply`, the
verdict's schema opening with a `judge_answer` field so the judge writes its answer before its grade. The first call
of `two_calls` writes an answer, not a verdict: its own `answer_max_tokens`, not the verdict's max_tokens.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import StrictUndefined, TemplateError, meta, nodes
from jinja2.sandbox import SandboxedEnvironment

from core import text as input_text
from core.errors import BadInput
from models.backends.base import Generation

from . import toml_lines
from .settings import bounded, setting
from .spec import parse_generation

RUBRICS_DIR = Path(__file__).resolve().parent.parent / "rubrics"


def rubric_dir(name: str, exp_dir: Path) -> Path:
    """Where rubric `name` of an experiment lives: the experiment's own `rubrics/` folder, sealed with it, when it
    holds `name.toml`; else the rubrics shipped in the repository."""
    own = Path(exp_dir) / "rubrics"
    return own if (own / f"{name}.toml").is_file() else RUBRICS_DIR


# The verdict field types judge.judging.verdict checks; a field of another type would reach the record unchecked.
FIELD_TYPES = ("string", "integer", "boolean")
SCALE_MAX = 1_000_000  # |score|: scores are averaged and bootstrapped as exact fractions, then shown as floats
SCALE_POINTS = 1000  # agreement builds scale x scale tables
ANSWER_FIRST = ("two_calls", "one_reply")  # how a rubric asks the judge for its own answer first (judge.answer_first)
# the keys of a rubric's TOML file, as docs/reference/registration.md lists them
RUBRIC_KEYS = ("name", "template", "system", "schema", "score_field", "scale", "bool_fields", "generation",
               "answer_first", "answer_max_tokens")
JUDGE_ANSWER = "judge_answer"  # the verdict field a `one_reply` rubric's schema opens with
ANSWER_MAX_TOKENS = 256  # a `two_calls` first call's max_tokens unless registered: an answer, longer than a verdict


@dataclass(frozen=True)
class Rubric:
    name: str
    path: str
    sha256: str  # of the TOML and the template together: any edit changes it
    system: str
    template: str
    schema: dict
    score_field: str
    scale: tuple[int, ...]
    bool_fields: tuple[str, ...]
    generation: Generation
    template_path: str = ""  # the template file, for messages about it
    answer_first: str = ""  # "" (the judge grades at once), or one of ANSWER_FIRST
    answer_max_tokens: int = ANSWER_MAX_TOKENS  # `two_calls`: the first call's max_tokens (the judge's own answer)

    @property
    def schema_text(self) -> str:
        return json.dumps(self.schema)  # property order kept: it is the order the judge writes fields in

    def render(self, **data: str | None) -> str:
        try:
            return _compiled(self.template).render(**data)
        except TemplateError as e:
            raise BadInput(self.path, f"rubric template does not render: {e}", field="template") from None

    def check_variables(self, provided: set[str], what: str) -> None:
        """Refuse a template variable the judge does not provide for `what` it judges (found by reading the
        template, so a branch the first render would skip is checked too), at its line in the template."""
        tree = _environment().parse(self.template)
        for name in sorted(meta.find_undeclared_variables(tree) - provided):
            line = next((n.lineno for n in tree.find_all(nodes.Name) if n.name == name), None)
            raise BadInput(self.template_path or self.path, f"the template uses {{{{ {name} }}}}, which a judge of "
                           f"{what} does not provide; it provides: {', '.join(sorted(provided))}", line=line,
                           field=name)


def _environment() -> SandboxedEnvironment:
    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


@lru_cache(maxsize=32)
def _compiled(template: str):
    """Compile once per template text: rendering is on the judging hot path."""
    return _environment().from_string(template)


def load_rubric(name: str, rubrics_dir: Path = RUBRICS_DIR) -> Rubric:
    path = rubrics_dir / f"{name}.toml"
    if not path.exists():
        raise BadInput(path, f"rubric {name!r} not found")
    raw = path.read_bytes()
    text = toml_lines.decode(raw, path)
    doc = toml_lines.loads(text, path)
    try:
        return _rubric(name, rubrics_dir, path, raw, doc)
    except BadInput as e:
        raise toml_lines.located(e, text) if e.file == str(path) else e from None


def _rubric(name: str, rubrics_dir: Path, path: Path, raw: bytes, doc: dict) -> Rubric:
    where = path.name
    for key in ("template", "schema", "score_field", "scale", "system"):
        if key not in doc:
            raise BadInput(path, "missing", field=key)
    template_name = setting(doc, "template", "string", path, where)
    tpath = rubrics_dir / template_name
    if not tpath.resolve().is_relative_to(rubrics_dir.resolve()):
        raise BadInput(path, f"template {template_name!r} lies outside the rubric's folder {rubrics_dir}",
                       field="template")
    if not tpath.is_file():
        raise BadInput(path, f"template file {tpath} not found", field="template")
    template = input_text.read(tpath)
    try:
        _compiled(template)  # parsed and compiled: a syntax error or an unknown filter is refused now
    except TemplateError as e:
        raise BadInput(tpath, f"rubric template does not parse: {e}", line=getattr(e, "lineno", None),
                       field="template") from None
    schema = _schema(doc["schema"], path)
    score_field = setting(doc, "score_field", "string", path, where)
    scale = _scale(doc["scale"], path)
    _score_values(schema, score_field, scale, path)
    bool_fields = setting(doc, "bool_fields", "strings", path, where, [])
    for f in bool_fields:
        if schema["properties"].get(f, {}).get("type") != "boolean":
            raise BadInput(path, f"bool field {f!r} is not a boolean property of the verdict schema",
                           field="bool_fields")
    answer_first = setting(doc, "answer_first", "string", path, where, "")
    if answer_first and answer_first not in ANSWER_FIRST:
        raise BadInput(path, f"must be one of {', '.join(map(repr, ANSWER_FIRST))} (or absent: the judge grades at "
                       f"once), got {answer_first!r}", field="answer_first")
    if answer_first == "one_reply":
        schema = _answer_first_schema(schema, path)
    answer_max_tokens = bounded(doc, "answer_max_tokens", "integer", path, where, ANSWER_MAX_TOKENS, bound="max_tokens")
    if "answer_max_tokens" in doc and answer_first != "two_calls":
        raise BadInput(path, "only answer_first = \"two_calls\" makes a first call, whose reply (the judge's own "
                       "answer) it bounds; a one_reply answer is part of the verdict ([generation] max_tokens)",
                       field="answer_max_tokens")
    generation = doc.get("generation", {})
    if not isinstance(generation, dict):
        raise BadInput(path, "must be a table of generation settings", field="generation")
    with toml_lines.table("generation"):
        parsed = parse_generation(generation, path, "[generation]")
    return Rubric(
        name=setting(doc, "name", "string", path, where, name), path=str(path),
        sha256=hashlib.sha256(raw + b"\0" + template.encode()).hexdigest(),
        system=setting(doc, "system", "string", path, where).strip(), template=template, schema=schema,
        score_field=score_field, scale=scale, bool_fields=tuple(bool_fields), generation=parsed,
        template_path=str(tpath), answer_first=answer_first, answer_max_tokens=answer_max_tokens,
    )


def _answer_first_schema(schema: dict, path: Path) -> dict:
    """A `one_reply` rubric's verdict schema: a required string `judge_answer` first, so the judge writes its own
    answer before any field of its grade (the schema's property order is the order the judge writes them in)."""
    if JUDGE_ANSWER in schema["properties"]:
        raise BadInput(path, f"answer_first = \"one_reply\" adds the verdict field {JUDGE_ANSWER!r} itself; the schema "
                       "must not declare it", field="answer_first")
    return {**schema, "properties": {JUDGE_ANSWER: {"type": "string"}, **schema["properties"]},
            "required": [JUDGE_ANSWER, *schema.get("required", [])]}


def _schema(schema: Any, path: Path) -> dict:
    """The verdict schema as judge.judging.verdict reads it: an object of scalar properties, `required` naming them."""
    if not isinstance(schema, dict):
        raise BadInput(path, "must be a table (the verdict's JSON schema)", field="schema")
    with toml_lines.table("schema"):
        props = schema.get("properties")
        if not isinstance(props, dict) or not props:
            raise BadInput(path, "[schema] needs a table of properties ([schema.properties.NAME])", field="properties")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) and r in props for r in required):
            raise BadInput(path, f"[schema] required must be a list of property names ({', '.join(props)})",
                           field="required")
    for key, spec in props.items():
        with toml_lines.table("schema", "properties", key):
            if not isinstance(spec, dict):
                raise BadInput(path, f"property {key!r} must be a table ([schema.properties.{key}])", field=key)
            if spec.get("type") not in FIELD_TYPES:
                raise BadInput(path, f"property {key!r} type must be one of {FIELD_TYPES} (what the verdict "
                               f"parser checks), got {spec.get('type')!r}", field="type")
            enum = spec.get("enum")
            if enum is not None and (not isinstance(enum, list) or not enum):
                raise BadInput(path, f"property {key!r} enum must be a non-empty list of values", field="enum")
    return schema


def _scale(scale: Any, path: Path) -> tuple[int, ...]:
    if (not isinstance(scale, list) or not 2 <= len(scale) <= SCALE_POINTS
            or not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) <= SCALE_MAX for v in scale)
            or list(scale) != sorted(set(scale))):
        raise BadInput(path, f"must be a list of 2 to {SCALE_POINTS} distinct integers in ascending order, each "
                       f"within ±{SCALE_MAX:,}, got {scale!r}", field="scale")
    return tuple(scale)


def _score_values(schema: dict, score_field: str, scale: tuple[int, ...], path: Path) -> None:
    """A score the verdict parser accepts is a point of the scale: an integer field whose enum lies on it, or a
    boolean field on the scale [0, 1]."""
    spec = schema["properties"].get(score_field)
    if spec is None:
        raise BadInput(path, f"score field {score_field!r} is not in the verdict schema", field="score_field")
    with toml_lines.table("schema", "properties", score_field):
        if spec["type"] == "boolean" and scale == (0, 1):
            return
        if spec["type"] != "integer":
            raise BadInput(path, f"score field {score_field!r} must be an integer property (or a boolean with scale "
                           f"[0, 1]), got type {spec['type']!r} with scale {list(scale)}", field="type")
        enum = spec.get("enum")
        if enum is None or not all(isinstance(v, int) and not isinstance(v, bool) and v in scale for v in enum):
            raise BadInput(path, f"score field {score_field!r} needs an enum of points of the scale {list(scale)}, so "
                           f"that every score the parser accepts is on the scale; got {enum!r}", field="enum")
