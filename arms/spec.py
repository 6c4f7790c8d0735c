"""Arm specs as registered in prereg.toml: which model, which quants, which adapter, which glue.

An arm is a system under test. Glue-over-base and glue-over-trained share the glue code and
differ only in the model, so the glue is a field of the arm, not a kind of arm.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .backends.base import Generation
from .errors import BadInput

BACKENDS = ("llama-cpp", "openai", "anthropic")


@dataclass(frozen=True)
class ModelSpec:
    """A model: for llama-cpp a GGUF `source` ("embedded:NAME" or a path); for HTTP a model name."""

    name: str
    backend: str
    source: str
    base_url: str | None = None
    family: str | None = None  # e.g. "smollm2": used to warn about judge self-preference


@dataclass(frozen=True)
class AdapterSpec:
    """A LoRA adapter: "generated:demo" (built by arms.lora) or a path to a GGUF adapter."""

    name: str
    source: str
    scale: float = 1.0


@dataclass(frozen=True)
class ArmSpec:
    name: str
    model: str
    quants: tuple[str, ...]
    generation: Generation
    adapter: str | None = None
    glue: str | None = None  # import path "package.module:function"
    samples: int = 1


def _need(table: dict, key: str, file: Path, where: str, kind: type | tuple = str) -> Any:
    if key not in table:
        raise BadInput(file, f"missing in {where}", field=key)
    value = table[key]
    if not isinstance(value, kind):
        raise BadInput(file, f"in {where} must be {getattr(kind, '__name__', kind)}, got {value!r}", field=key)
    return value


def parse_generation(table: dict, file: Path, where: str) -> Generation:
    known = set(Generation.__dataclass_fields__)
    for key in table:
        if key not in known:
            raise BadInput(file, f"unknown generation setting in {where}; known: {sorted(known)}", field=key)
    kw = dict(table)
    if "stop" in kw:
        kw["stop"] = tuple(kw["stop"])
    try:
        return Generation(**kw)
    except TypeError as e:
        raise BadInput(file, f"bad generation settings in {where}: {e}", field="generation") from None


def parse_models(doc: dict, file: Path) -> dict[str, ModelSpec]:
    out = {}
    for name, t in (doc.get("models") or {}).items():
        backend = _need(t, "backend", file, f"[models.{name}]")
        if backend not in BACKENDS:
            raise BadInput(file, f"[models.{name}] backend must be one of {BACKENDS}", field="backend")
        out[name] = ModelSpec(name=name, backend=backend, source=_need(t, "source", file, f"[models.{name}]"),
                              base_url=t.get("base_url"), family=t.get("family"))
    return out


def parse_adapters(doc: dict, file: Path) -> dict[str, AdapterSpec]:
    return {
        name: AdapterSpec(name=name, source=_need(t, "source", file, f"[adapters.{name}]"),
                          scale=float(t.get("scale", 1.0)))
        for name, t in (doc.get("adapters") or {}).items()
    }


def parse_arms(doc: dict, file: Path, models: dict[str, ModelSpec], adapters: dict[str, AdapterSpec]) -> list[ArmSpec]:
    arms = []
    seen = set()
    for i, t in enumerate(doc.get("arms") or []):
        where = f"[[arms]] #{i + 1}"
        name = _need(t, "name", file, where)
        if name in seen:
            raise BadInput(file, f"arm {name!r} registered twice", field="name")
        seen.add(name)
        model = _need(t, "model", file, where)
        if model not in models:
            raise BadInput(file, f"arm {name!r} names unknown model {model!r}", field="model")
        adapter = t.get("adapter")
        if adapter is not None and adapter not in adapters:
            raise BadInput(file, f"arm {name!r} names unknown adapter {adapter!r}", field="adapter")
        quants = tuple(_need(t, "quants", file, where, list))
        if not quants or not all(isinstance(q, str) for q in quants):
            raise BadInput(file, f"arm {name!r} needs a non-empty list of quant names", field="quants")
        glue = t.get("glue")
        if glue is not None and ":" not in glue:
            raise BadInput(file, f"arm {name!r} glue must be an import path 'package.module:function'", field="glue")
        arms.append(ArmSpec(name=name, model=model, quants=quants, adapter=adapter, glue=glue,
                            samples=int(t.get("samples", 1)),
                            generation=parse_generation(t.get("generation", {}), file, where)))
    if not arms:
        raise BadInput(file, "no arms registered", field="arms")
    return arms
