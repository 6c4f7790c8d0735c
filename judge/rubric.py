"""Rubrics: a TOML file (scale, verdict schema, system text) plus a jinja2 template for the prompt.

Rendering uses a sandboxed jinja2 environment, and questions and answers are passed only as
variables: an answer containing `{{ 7*7 }}` is shown literally, never evaluated.
"""
from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from arms.backends.base import Generation
from arms.errors import BadInput
from registration.prereg import RUBRICS_DIR
from registration.spec import parse_generation


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

    @property
    def schema_text(self) -> str:
        return json.dumps(self.schema)  # property order kept: it is the order the judge writes fields in

    def render(self, **data: str | None) -> str:
        try:
            return _compiled(self.template).render(**data)
        except TemplateError as e:
            raise BadInput(self.path, f"rubric template does not render: {e}", field="template") from None


@lru_cache(maxsize=32)
def _compiled(template: str):
    """Compile once per template text: rendering is on the judging hot path."""
    env = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    return env.from_string(template)


def load_rubric(name: str, rubrics_dir: Path = RUBRICS_DIR) -> Rubric:
    path = rubrics_dir / f"{name}.toml"
    if not path.exists():
        raise BadInput(path, f"rubric {name!r} not found")
    raw = path.read_bytes()
    try:
        doc = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise BadInput(path, f"not valid TOML: {e}") from None
    for key in ("template", "schema", "score_field", "scale", "system"):
        if key not in doc:
            raise BadInput(path, "missing", field=key)
    tpath = rubrics_dir / doc["template"]
    if not tpath.exists():
        raise BadInput(path, f"template file {tpath} not found", field="template")
    template = tpath.read_text()
    env = SandboxedEnvironment()
    try:
        env.parse(template)
    except TemplateError as e:
        raise BadInput(tpath, f"rubric template does not parse: {e}", line=getattr(e, "lineno", None)) from None
    props = doc["schema"].get("properties", {})
    if doc["score_field"] not in props:
        raise BadInput(path, f"score field {doc['score_field']!r} is not in the verdict schema", field="score_field")
    return Rubric(
        name=doc.get("name", name), path=str(path),
        sha256=hashlib.sha256(raw + b"\0" + template.encode()).hexdigest(),
        system=doc["system"].strip(), template=template, schema=doc["schema"], score_field=doc["score_field"],
        scale=tuple(doc["scale"]), bool_fields=tuple(doc.get("bool_fields", [])),
        generation=parse_generation(doc.get("generation", {}), path, "[generation]"),
    )
