"""Arm specs as registered in prereg.toml: which model, which quants, which adapters, which glue.

An arm is a system under test. Glue-over-base and glue-over-trained share the glue code and
differ only in the model, so the glue is a field of the arm, not a kind of arm. Everything a
backend could silently change (file hashes, chat template, thinking mode, sampling) can be
registered here, and the runner refuses to start when what it reads back differs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .backends.base import Generation
from .errors import BadInput

BACKENDS = ("llama-cpp", "openai", "anthropic")
# How an OpenAI(-compatible) server is told thinking on/off: not at all; `chat_template_kwargs.enable_thinking`
# (vLLM, llama-server render the template with it); or `reasoning_effort` ("none" = off; OpenAI reasoning models).
THINKING_CONTROLS = ("none", "chat_template_kwargs", "reasoning_effort")
EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max")


@dataclass(frozen=True)
class Runtime:
    """Machine settings recorded in run.json: llama.cpp threads are always explicit."""

    threads: int = 1
    n_ctx: int = 2048
    seed: int = 0  # llama.cpp context seed (each request also sends its own registered seed)


@dataclass(frozen=True)
class ModelSpec:
    """A model: for llama-cpp a GGUF `source` ("embedded:NAME" or a path); for HTTP a model name.

    `base_url` is the first server; `base_urls` all of them (one model served by a fleet is
    load-balanced across every URL). `sha256` maps a quant name ("source" for the file as
    given) to the file's registered sha256. `chat_template` is a registered template file that
    replaces the GGUF's own; `chat_template_sha256` pins whichever template is used.
    """

    name: str
    backend: str
    source: str
    base_url: str | None = None
    family: str | None = None  # e.g. "smollm2": used to warn about judge self-preference
    base_urls: tuple[str, ...] = ()
    sha256: dict[str, str] = field(default_factory=dict)
    chat_template: str | None = None
    chat_template_sha256: str | None = None
    imatrix: str | None = None  # importance matrix file for every derived quant
    concurrency: int = 4  # HTTP backends: requests in flight at once (in-process llama.cpp: always 1)
    thinking_control: str = "none"  # openai: how thinking is switched, one of THINKING_CONTROLS
    sampling_params: bool = False  # Anthropic-compatible server accepts temperature/top_p (the API does not)
    attempts: int = 4  # HTTP backends: tries per call before the answer becomes an `error` row
    timeout_s: float = 120.0  # HTTP backends: one attempt that takes longer is abandoned (and retried)
    api_key_env: str | None = None  # HTTP backends: the variable holding the key (default: the SDK's usual one)

    def urls(self) -> tuple[str, ...]:
        return self.base_urls or ((self.base_url,) if self.base_url else ())


@dataclass(frozen=True)
class AdapterSpec:
    """A LoRA adapter: "generated:demo" (built by arms.lora) or a path to a GGUF adapter."""

    name: str
    source: str
    scale: float = 1.0
    sha256: str | None = None


@dataclass(frozen=True)
class ArmSpec:
    name: str
    model: str
    quants: tuple[str, ...]
    generation: Generation
    adapters: tuple[str, ...] = ()  # applied together, each with its registered scale
    glue: str | None = None  # import path "package.module:function"
    samples: int = 1


MODEL_KEYS = ("backend", "source", "base_url", "family", "sha256", "chat_template", "chat_template_sha256", "imatrix",
              "concurrency", "attempts", "timeout_s", "api_key_env", "thinking_control", "sampling_params")
ADAPTER_KEYS = ("source", "scale", "sha256")
ARM_KEYS = ("name", "model", "adapter", "quants", "glue", "samples", "generation")


def check_keys(table: Any, known: tuple[str, ...], file: Path | str, where: str) -> None:
    """A misspelt setting must not be silently ignored: refuse any key the table does not define."""
    if not isinstance(table, dict):
        raise BadInput(file, f"{where} must be a table", field=where)
    for key in table:
        if key not in known:
            raise BadInput(file, f"unknown setting in {where}; known: {', '.join(known)}", field=key)


def _need(table: dict, key: str, file: Path, where: str, kind: type | tuple = str) -> Any:
    if key not in table:
        raise BadInput(file, f"missing in {where}", field=key)
    value = table[key]
    if not isinstance(value, kind):
        raise BadInput(file, f"in {where} must be {getattr(kind, '__name__', kind)}, got {value!r}", field=key)
    return value


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
    budget = kw.get("thinking_budget")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise BadInput(file, f"in {where} must be a positive number of tokens", field="thinking_budget")
    if kw.get("effort") is not None and kw["effort"] not in EFFORTS:
        raise BadInput(file, f"in {where} must be one of {EFFORTS}", field="effort")
    for key in ("temperature", "top_p", "seed"):
        if kw.get(key) == PROVIDER_DEFAULT:
            kw[key] = None  # registered as "whatever the provider uses": nothing is sent, verification expects nothing
        elif key in kw and (isinstance(kw[key], bool) or not isinstance(kw[key], (int, float))):
            raise BadInput(file, f"in {where} must be a number or {PROVIDER_DEFAULT!r}", field=key)
    try:
        return Generation(**kw)
    except TypeError as e:
        raise BadInput(file, f"bad generation settings in {where}: {e}", field="generation") from None


def parse_runtime(doc: dict, file: Path) -> Runtime:
    rt = doc.get("runtime") or {}
    try:
        runtime = Runtime(threads=int(rt.get("threads", 1)), n_ctx=int(rt.get("n_ctx", 2048)),
                          seed=int(rt.get("seed", 0)))
    except (TypeError, ValueError) as e:
        raise BadInput(file, f"[runtime] settings must be integers: {e}", field="runtime") from None
    if runtime.threads < 1 or runtime.n_ctx < 16:
        raise BadInput(file, "[runtime] threads must be >= 1 and n_ctx >= 16", field="runtime")
    return runtime


def parse_models(doc: dict, file: Path) -> dict[str, ModelSpec]:
    out = {}
    for name, t in (doc.get("models") or {}).items():
        where = f"[models.{name}]"
        check_keys(t, MODEL_KEYS, file, where)
        backend = _need(t, "backend", file, where)
        if backend not in BACKENDS:
            raise BadInput(file, f"{where} backend must be one of {BACKENDS}", field="backend")
        urls = _strings(t.get("base_url"), file, where, "base_url")
        sha = t.get("sha256", {})
        if isinstance(sha, str):
            sha = {"source": sha}
        if not isinstance(sha, dict) or not all(isinstance(v, str) and len(v) == 64 for v in sha.values()):
            raise BadInput(file, f"{where} sha256 must be a hex digest or a table quant -> hex digest", field="sha256")
        for key, default in (("concurrency", 4), ("attempts", 4)):
            if not isinstance(t.get(key, default), int) or t.get(key, default) < 1:
                raise BadInput(file, f"{where} {key} must be a positive integer", field=key)
        timeout = t.get("timeout_s", 120.0)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise BadInput(file, f"{where} timeout_s must be a positive number of seconds", field="timeout_s")
        out[name] = ModelSpec(name=name, backend=backend, source=_need(t, "source", file, where),
                              base_url=urls[0] if urls else None, family=t.get("family"), base_urls=urls,
                              sha256={k: v.lower() for k, v in sha.items()}, chat_template=t.get("chat_template"),
                              chat_template_sha256=t.get("chat_template_sha256"), imatrix=t.get("imatrix"),
                              concurrency=t.get("concurrency", 4), attempts=t.get("attempts", 4),
                              timeout_s=float(timeout), api_key_env=t.get("api_key_env"),
                              thinking_control=_thinking_control(t, backend, file, where),
                              sampling_params=bool(t.get("sampling_params", False)))
    return out


def _thinking_control(t: dict, backend: str, file: Path, where: str) -> str:
    control = t.get("thinking_control", "none")
    if control not in THINKING_CONTROLS:
        raise BadInput(file, f"{where} thinking_control must be one of {THINKING_CONTROLS}", field="thinking_control")
    if control != "none" and backend != "openai":
        raise BadInput(file, f"{where} thinking_control is for the openai backend (llama-cpp switches thinking "
                       "through the chat template, anthropic through its thinking parameter)", field="thinking_control")
    return control


def check_generation(model: ModelSpec, g: Generation, file: Path | str, where: str) -> None:
    """Refuse generation settings this model's backend has no way to send, before any call is made."""
    if model.backend == "llama-cpp" and None in (g.temperature, g.top_p, g.seed):
        raise BadInput(file, f"{where}: llama.cpp has no provider default worth trusting (it would apply its "
                       "own); register temperature, top_p and seed", field="generation")
    if g.thinking_budget is not None and model.backend != "anthropic":
        raise BadInput(file, f"{where}: thinking_budget is sent only to the anthropic backend; model "
                       f"{model.name!r} is {model.backend}", field="thinking_budget")
    if model.backend == "anthropic" and g.thinking:
        if g.thinking_budget is None:
            raise BadInput(file, f"{where}: thinking on the anthropic backend needs a registered thinking_budget "
                           "(tokens, at least 1024)", field="thinking_budget")
        if not 1024 <= g.thinking_budget < g.max_tokens:
            raise BadInput(file, f"{where}: thinking_budget must be at least 1024 and below max_tokens "
                           f"({g.max_tokens})", field="thinking_budget")
    if g.thinking_budget is not None and not g.thinking:
        raise BadInput(file, f"{where}: a thinking_budget is registered but thinking is off", field="thinking_budget")
    if g.effort is not None:
        if model.backend == "llama-cpp" or (model.backend == "openai" and model.thinking_control == "none"):
            raise BadInput(file, f"{where}: effort cannot be sent to model {model.name!r} (llama-cpp, or an openai "
                           "model without thinking_control)", field="effort")
        if model.backend == "openai" and not g.thinking:
            raise BadInput(file, f"{where}: effort is registered but thinking is off", field="effort")
    if model.backend == "openai" and model.thinking_control == "reasoning_effort" and g.thinking and g.effort is None:
        raise BadInput(file, f"{where}: thinking on through reasoning_effort needs a registered effort", field="effort")


def parse_adapters(doc: dict, file: Path) -> dict[str, AdapterSpec]:
    out = {}
    for name, t in (doc.get("adapters") or {}).items():
        where = f"[adapters.{name}]"
        check_keys(t, ADAPTER_KEYS, file, where)
        out[name] = AdapterSpec(name=name, source=_need(t, "source", file, where), scale=float(t.get("scale", 1.0)),
                                sha256=t.get("sha256"))
    return out


def parse_arms(doc: dict, file: Path, models: dict[str, ModelSpec], adapters: dict[str, AdapterSpec]) -> list[ArmSpec]:
    arms = []
    seen = set()
    for i, t in enumerate(doc.get("arms") or []):
        where = f"[[arms]] #{i + 1}"
        check_keys(t, ARM_KEYS, file, where)
        name = _need(t, "name", file, where)
        if name in seen:
            raise BadInput(file, f"arm {name!r} registered twice", field="name")
        seen.add(name)
        model = _need(t, "model", file, where)
        if model not in models:
            raise BadInput(file, f"arm {name!r} names unknown model {model!r}", field="model")
        names = _strings(t.get("adapter"), file, where, "adapter")
        for adapter in names:
            if adapter not in adapters:
                raise BadInput(file, f"arm {name!r} names unknown adapter {adapter!r}", field="adapter")
        quants = tuple(_need(t, "quants", file, where, list))
        if not quants or not all(isinstance(q, str) for q in quants):
            raise BadInput(file, f"arm {name!r} needs a non-empty list of quant names", field="quants")
        if len(quants) > 1 and models[model].backend != "llama-cpp":
            raise BadInput(file, f"arm {name!r} runs on {models[model].backend} model {model!r}, which is served: a "
                           f"quant label never reaches the server, so {quants[1]!r} would be answered from the call "
                           f"cache of {quants[0]!r}. Register one label, and each served quantisation as its own "
                           "model and arm", field="quants")
        glue = t.get("glue")
        if glue is not None and ":" not in glue:
            raise BadInput(file, f"arm {name!r} glue must be an import path 'package.module:function'", field="glue")
        samples = t.get("samples", 1)
        if not isinstance(samples, int) or samples < 1:
            raise BadInput(file, f"arm {name!r} samples must be an integer >= 1", field="samples")
        generation = parse_generation(t.get("generation", {}), file, where)
        check_generation(models[model], generation, file, f"arm {name!r}")
        arms.append(ArmSpec(name=name, model=model, quants=quants, adapters=names, glue=glue, samples=samples,
                            generation=generation))
    if not arms:
        raise BadInput(file, "no arms registered", field="arms")
    return arms
