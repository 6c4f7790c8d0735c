"""[judges.NAME]: a judge as registered: which model scores, at which quant, and its own generation settings."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.errors import BadInput
from models.spec import ModelSpec

from .rubric import Rubric
from .settings import check_keys, setting
from .spec import parse_generation

JUDGE_TABLE_KEYS = ("model", "quant", "requires_env", "generation")


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    model: str  # key into [models]
    quant: str | None
    requires_env: str | None = None
    generation: tuple[tuple[str, Any], ...] = ()  # registered overrides of the rubric's generation settings

    def rubric(self, rubric: Rubric) -> Rubric:
        """The rubric as this judge runs it: e.g. a Claude judge registers temperature "provider-default"
        because the API accepts none, and settings verification then expects nothing to be sent."""
        if not self.generation:
            return rubric
        return replace(rubric, generation=replace(rubric.generation, **dict(self.generation)))


def parse_judge(name: str, t: Any, file: Path, models: dict[str, ModelSpec]) -> JudgeSpec:
    where = f"[judges.{name}]"
    check_keys(t, JUDGE_TABLE_KEYS, file, where)
    model = setting(t, "model", "string", file, where)
    if model not in models:
        raise BadInput(file, f"{where} names unknown model {model!r}", field="model")
    overrides = t.get("generation", {})
    if not isinstance(overrides, dict):
        raise BadInput(file, f"{where} generation must be a table of settings", field="generation")
    parsed = parse_generation(overrides, file, f"{where} generation")
    return JudgeSpec(name=name, model=model, quant=setting(t, "quant", "string", file, where, None),
                     requires_env=setting(t, "requires_env", "string", file, where, None),
                     generation=tuple((k, getattr(parsed, k)) for k in sorted(overrides)))
