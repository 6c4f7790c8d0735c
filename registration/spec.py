"""Arm specs as registered in prereg.toml: which model, which quants, which adapters, which glue.

An arm is a system under test. Glue-over-base and glue-over-trained share the glue code and
differ only in the model, so the glue is a field of the arm, not a kind of arm. Everything a
backend could silently change (file hashes, chat template, thinking mode, sampling) can be
registered here, and the runner refuses to start when what it reads back differs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.errors import BadInput
from models.backends.base import STRUCTURED, Generation
from models.llama_loader import registrable
from models.spec import AdapterSpec, ModelSpec, Runtime

from . import toml_lines
from .settings import BOUNDS, KINDS, SEED_MAX, bounded, check_keys, http_url, plain_name, setting

# How an OpenAI(-compatible) server is told thinking on/off: not at all; `chat_template_kwargs.enable_thinking`
# (vLLM, llama-server render the template with it); or `reasoning_effort` ("none" = off; OpenAI reasoning models).
THINKING_CONTROLS = ("none", "chat_template_kwargs", "reasoning_effort")
# How an OpenAI(-compatible) server is asked for a verdict's structure: `response_format` json_schema (OpenAI,
# vLLM, llama-server); json_object with the schema inside it (`python -m llama_cpp.server`, which refuses
# json_schema); or not at all, leaving the strict parser of judge.judging.verdict to decide.
EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max")
CODE_TIMEOUT_S = 60.0  # the default limit of each step of the experiment's own code run contained (arms.contained)


@dataclass(frozen=True)
class ArmSpec:
    name: str
    model: str
    quants: tuple[str, ...]
    generation: Generation
    adapters: tuple[str, ...] = ()  # applied together, each with its registered scale
    glue: str | None = None  # "file.py:function" in the experiment folder, or "package.module:function"
    samples: int = 1
    # verify runs the glue again contained (arms.contained): its import, and each row, within this many seconds
    glue_timeout_s: float = CODE_TIMEOUT_S


MODEL_KEYS = ("backend", "source", "base_url", "family", "sha256", "chat_template", "chat_template_sha256", "imatrix",
              "concurrency", "attempts", "timeout_s", "deadline_s", "api_key_env", "thinking_control",
              "sampling_params", "structured", "provider_batch", "batch_poll_s", "batch_max_requests",
              "batch_max_bytes", "price_input", "price_output")
# keys that only the backends whose BackendInfo.model_keys lists them read, at their default when unregistered
BACKEND_MODEL_KEYS = {"thinking_control": "none", "sampling_params": False, "structured": "json_schema",
                      "provider_batch": False, "batch_poll_s": 60.0, "batch_max_requests": None,
                      "batch_max_bytes": None, "deadline_s": 600.0}
ADAPTER_KEYS = ("source", "scale", "sha256")
ARM_KEYS = ("name", "model", "adapter", "quants", "glue", "samples", "generation", "glue_timeout_s")


def _strings(value: Any, file: Path, where: str, key: str) -> tuple[str, ...]:
    """A string or a list of strings, as a tuple."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise BadInput(file, f"in {where} must be a string or a non-empty list of strings, got {value!r}", field=key)


PROVIDER_DEFAULT = "provider-default"


def parse_generation(table: dict, file: Path, where: str) -> Generation:
    known = set(Generation.__dataclass_fields__)
    for key in table:
        if key not in known:
            raise BadInput(file, f"unknown generation setting in {where}; known: {sorted(known)}", field=key)
    kw = dict(table)
    if "stop" in kw:
        kw["stop"] = _strings(kw["stop"], file, where, "stop")
    if "thinking" in kw and not isinstance(kw["thinking"], bool):
        raise BadInput(file, f"in {where} must be true or false", field="thinking")
    if kw.get("thinking_budget") is not None:
        bounded(kw, "thinking_budget", "integer", file, where, bound="max_tokens")
    if kw.get("effort") is not None and kw["effort"] not in EFFORTS:
        raise BadInput(file, f"in {where} must be one of {EFFORTS}", field="effort")
    for key in ("temperature", "top_p", "seed"):
        if kw.get(key) == PROVIDER_DEFAULT:
            kw[key] = None  # registered as "whatever the provider uses": nothing is sent, verification expects nothing
        elif key in kw and not KINDS["integer" if key == "seed" else "number"][0](kw[key]):
            what = "an integer" if key == "seed" else "a number"
            raise BadInput(file, f"in {where} must be {what} or {PROVIDER_DEFAULT!r}, got {kw[key]!r}", field=key)
    if kw.get("seed") is not None:
        bounded(kw, "seed", "integer", file, where)
    if kw.get("temperature") is not None and kw["temperature"] < 0:
        raise BadInput(file, f"in {where} must be >= 0, got {kw['temperature']!r}", field="temperature")
    if kw.get("top_p") is not None and not 0 < kw["top_p"] <= 1:
        raise BadInput(file, f"in {where} must be in (0, 1], got {kw['top_p']!r}", field="top_p")
    bounded(kw, "max_tokens", "integer", file, where, 1)
    setting(kw, "system", "string", file, where, None)
    try:
        return Generation(**kw)
    except TypeError as e:
        raise BadInput(file, f"bad generation settings in {where}: {e}", field="generation") from None


def parse_runtime(doc: dict, file: Path) -> Runtime:
    rt = doc.get("runtime") or {}
    where = "[runtime]"
    if not isinstance(rt, dict):
        raise BadInput(file, f"{where} must be a table", field="runtime")
    runtime = Runtime(threads=bounded(rt, "threads", "integer", file, where, 1),
                      n_ctx=bounded(rt, "n_ctx", "integer", file, where, 2048),
                      seed=bounded(rt, "seed", "integer", file, where, 0),
                      parallel_sequences=bounded(rt, "parallel_sequences", "integer", file, where, 1),
                      flash_attn=setting(rt, "flash_attn", "boolean", file, where, False),
                      max_cost_usd=bounded(rt, "max_cost_usd", "number", file, where, None, bound="max_cost"))
    extra = rt.get("cpu_extra_buffers", "auto")
    if not registrable(extra):
        raise BadInput(file, f"in {where} must be \"auto\", true or false, got {extra!r}", field="cpu_extra_buffers")
    gpu_layers = bounded(rt, "gpu_layers", "integer", file, where, 0)
    return replace(runtime, cpu_extra_buffers=extra, gpu_layers=gpu_layers)


def parse_models(doc: dict, file: Path) -> dict[str, ModelSpec]:
    out = {}
    for name, t in (doc.get("models") or {}).items():
        with toml_lines.table("models", name):
            out[name] = _model(name, t, file)
    return out


def _model(name: str, t: Any, file: Path) -> ModelSpec:
    from models.backends.registry import REGISTRY

    where = f"[models.{name}]"
    check_keys(t, MODEL_KEYS, file, where)
    backend = setting(t, "backend", "string", file, where)
    if backend not in REGISTRY:
        raise BadInput(file, f"{where} backend {backend!r} is not one of {tuple(REGISTRY)}", field="backend")
    for key, default in BACKEND_MODEL_KEYS.items():
        if t.get(key, default) != default and key not in REGISTRY[backend].model_keys:
            users = [name for name, info in REGISTRY.items() if key in info.model_keys]
            raise BadInput(file, f"{where} {key} is for the {' and '.join(users)} backend (backend {backend!r} "
                           "does not read it)", field=key)
    urls = tuple(http_url(u, file, where) for u in _strings(t.get("base_url"), file, where, "base_url"))
    sha = t.get("sha256", {})
    if isinstance(sha, str):
        sha = {"source": sha}
    if not isinstance(sha, dict) or not all(_is_digest(v) for v in sha.values()):
        raise BadInput(file, f"{where} sha256 must be a hex digest or a table quant -> hex digest", field="sha256")
    template_sha = setting(t, "chat_template_sha256", "string", file, where, None)
    if template_sha is not None and not _is_digest(template_sha):
        raise BadInput(file, f"{where} must be a sha256 hex digest (64 hex digits)", field="chat_template_sha256")
    for key, default in (("concurrency", 4), ("attempts", 4)):
        bounded(t, key, "integer", file, where, default)
    timeout = bounded(t, "timeout_s", "number", file, where, 120.0)
    total = bounded(t, "deadline_s", "number", file, where, BACKEND_MODEL_KEYS["deadline_s"])
    bounded(t, "batch_poll_s", "number", file, where, 60.0)
    for key in ("batch_max_requests", "batch_max_bytes"):
        bounded(t, key, "integer", file, where, 1)
    for key in ("price_input", "price_output"):
        bounded(t, key, "number", file, where, 0, bound="price")
    if ("price_input" in t) != ("price_output" in t):
        missing = "price_output" if "price_input" in t else "price_input"
        raise BadInput(file, f"{where} registers one price without the other: a cost needs both", field=missing)
    return ModelSpec(name=name, backend=backend, source=setting(t, "source", "string", file, where),
                     base_url=urls[0] if urls else None, family=setting(t, "family", "string", file, where, None),
                     base_urls=urls, sha256={k: v.lower() for k, v in sha.items()},
                     chat_template=setting(t, "chat_template", "string", file, where, None),
                     chat_template_sha256=template_sha and template_sha.lower(),
                     imatrix=setting(t, "imatrix", "string", file, where, None),
                     concurrency=t.get("concurrency", 4), attempts=t.get("attempts", 4), timeout_s=float(timeout),
                     deadline_s=float(total),
                     api_key_env=setting(t, "api_key_env", "string", file, where, None),
                     thinking_control=_one_of(t, "thinking_control", THINKING_CONTROLS, file, where),
                     sampling_params=setting(t, "sampling_params", "boolean", file, where, False),
                     structured=_one_of(t, "structured", STRUCTURED, file, where),
                     provider_batch=setting(t, "provider_batch", "boolean", file, where, False),
                     batch_poll_s=float(t.get("batch_poll_s", 60.0)), batch_max_requests=t.get("batch_max_requests"),
                     batch_max_bytes=t.get("batch_max_bytes"), price_input=t.get("price_input"),
                     price_output=t.get("price_output"))


def _is_digest(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-fA-F]{64}", value) is not None


def _one_of(t: dict, key: str, values: tuple[str, ...], file: Path, where: str) -> str:
    value = t.get(key, BACKEND_MODEL_KEYS[key])
    if value not in values:
        raise BadInput(file, f"{where} {key} must be one of {values}", field=key)
    return value


def check_generation(model: ModelSpec, g: Generation, file: Path | str, where: str) -> None:
    """Refuse generation settings this model's backend has no way to send, before any call is made."""
    from models.backends.registry import backend_info

    info = backend_info(model.backend)
    for key in ("thinking_budget", "effort"):
        if getattr(g, key) is not None and key not in info.sends:
            raise BadInput(file, f"{where}: {key} cannot be sent to model {model.name!r} (backend {model.backend})",
                           field=key)
    if g.thinking_budget is not None and not g.thinking:
        raise BadInput(file, f"{where}: a thinking_budget is registered but thinking is off", field="thinking_budget")
    for key, message in info.check_generation(model, g):
        raise BadInput(file, f"{where}: {message}", field=key)


def parse_adapters(doc: dict, file: Path) -> dict[str, AdapterSpec]:
    out = {}
    for name, t in (doc.get("adapters") or {}).items():
        where = f"[adapters.{name}]"
        with toml_lines.table("adapters", name):
            check_keys(t, ADAPTER_KEYS, file, where)
            sha = setting(t, "sha256", "string", file, where, None)
            if sha is not None and not _is_digest(sha):
                raise BadInput(file, f"{where} must be a sha256 hex digest (64 hex digits)", field="sha256")
            out[name] = AdapterSpec(name=name, source=setting(t, "source", "string", file, where),
                                    scale=float(bounded(t, "scale", "number", file, where, 1.0)), sha256=sha)
    return out


def parse_arms(doc: dict, file: Path, models: dict[str, ModelSpec], adapters: dict[str, AdapterSpec]) -> list[ArmSpec]:
    arms: list[ArmSpec] = []
    for i, t in enumerate(doc.get("arms") or []):
        with toml_lines.table("arms", i):
            arms.append(_arm(f"[[arms]] #{i + 1}", t, file, models, adapters, arms))
    if not arms:
        raise BadInput(file, "no arms registered", field="arms")
    return arms


def _arm(where: str, t: Any, file: Path, models: dict[str, ModelSpec], adapters: dict[str, AdapterSpec],
         before: list[ArmSpec]) -> ArmSpec:
    check_keys(t, ARM_KEYS, file, where)
    name = plain_name(setting(t, "name", "string", file, where), file, where, "name")
    if any(a.name == name for a in before):
        raise BadInput(file, f"arm {name!r} registered twice: arm names must be unique", field="name")
    model = setting(t, "model", "string", file, where)
    if model not in models:
        raise BadInput(file, f"arm {name!r} names unknown model {model!r}", field="model")
    names = _strings(t.get("adapter"), file, where, "adapter")
    for adapter in names:
        if adapter not in adapters:
            raise BadInput(file, f"arm {name!r} names unknown adapter {adapter!r}", field="adapter")
    from models.backends.registry import backend_info

    local = backend_info(models[model].backend).local
    if names and not local:
        raise BadInput(file, f"arm {name!r}: adapters are applied by the server for backend "
                       f"{models[model].backend!r}; register the served adapter as its own model", field="adapter")
    quants = tuple(setting(t, "quants", "strings", file, where))
    if not quants:
        raise BadInput(file, f"arm {name!r} needs a non-empty list of quant names", field="quants")
    if len(set(quants)) != len(quants):
        raise BadInput(file, f"arm {name!r} lists a quant twice: {list(quants)}", field="quants")
    if len(quants) > 1 and not local:
        raise BadInput(file, f"arm {name!r} runs on {models[model].backend} model {model!r}, which is served: a "
                       f"quant label never reaches the server, so {quants[1]!r} would be answered from the call "
                       f"cache of {quants[0]!r}. Register one label, and each served quantisation as its own "
                       "model and arm", field="quants")
    glue = setting(t, "glue", "string", file, where, None)
    if glue is not None and models[model].provider_batch:
        raise BadInput(file, f"arm {name!r} has glue, whose calls depend on each other's replies, on model {model!r} "
                       "registered with provider_batch = true: a batch answers only calls known before it is sent (a "
                       "known gap: glue arms cannot run through a provider batch). Register the model without "
                       "provider_batch, or "
                       "the arm without glue", field="glue")
    if glue is not None and ":" not in glue:
        raise BadInput(file, f"arm {name!r} glue must be 'file.py:function' (a file in the experiment folder) or "
                       "'package.module:function'", field="glue")
    samples = bounded(t, "samples", "integer", file, where, 1)
    glue_timeout = bounded(t, "glue_timeout_s", "number", file, where, CODE_TIMEOUT_S, bound="code_timeout_s")
    generation = t.get("generation", {})
    if not isinstance(generation, dict):
        raise BadInput(file, f"arm {name!r} generation must be a table of settings", field="generation")
    generation = parse_generation(generation, file, where)
    if generation.seed is not None and generation.seed + samples - 1 > SEED_MAX:
        raise BadInput(file, f"arm {name!r}: sample k is sent seed + k, and seed {generation.seed} + {samples - 1} "
                       f"exceeds {SEED_MAX:,} ({BOUNDS['seed'].why})", field="seed")
    check_generation(models[model], generation, file, f"arm {name!r}")
    return ArmSpec(name=name, model=model, quants=quants, adapters=names, glue=glue, samples=samples,
                   generation=generation, glue_timeout_s=float(glue_timeout))
