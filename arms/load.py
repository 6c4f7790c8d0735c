"""Turn a registered model (+ quant, + adapter) into a live backend: resolve files, quantise, load.

One load per (model, quant, adapter): callers keep the returned backend and share it between
every arm (and judge) that uses the same triple.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .backends.base import Backend
from .errors import BadInput
from .models import embedded_model
from .quantize import QuantFile, quantize
from .spec import AdapterSpec, ModelSpec


@dataclass(frozen=True)
class Runtime:
    """Machine settings recorded in run.json: llama.cpp threads are always explicit."""

    threads: int = 1
    n_ctx: int = 2048


def model_source(spec: ModelSpec, exp_dir: Path) -> Path:
    if spec.source.startswith("embedded:"):
        return embedded_model(spec.source.split(":", 1)[1])
    path = Path(spec.source)
    return path if path.is_absolute() else (exp_dir / path)


def adapter_file(spec: AdapterSpec, base: Path, exp_dir: Path) -> Path:
    if spec.source == "generated:demo":
        from .lora import demo_adapter

        return demo_adapter(base)
    path = Path(spec.source)
    path = path if path.is_absolute() else (exp_dir / path)
    if not path.exists():
        raise BadInput(path, f"adapter {spec.name!r} file not found", field="source")
    return path


def quant_file(spec: ModelSpec, quant: str, exp_dir: Path, runtime: Runtime) -> QuantFile:
    return quantize(model_source(spec, exp_dir), quant, threads=runtime.threads)


def open_backend(spec: ModelSpec, quant: str | None, adapter: AdapterSpec | None, exp_dir: Path,
                 runtime: Runtime) -> Backend:
    if spec.backend == "llama-cpp":
        from .backends.llama_cpp import LlamaConfig, LlamaCppBackend

        qf = quant_file(spec, quant or "source", exp_dir, runtime)
        lora = adapter_file(adapter, model_source(spec, exp_dir), exp_dir) if adapter else None
        return LlamaCppBackend(LlamaConfig(model_path=qf.info.path, threads=runtime.threads, n_ctx=runtime.n_ctx,
                                           lora_path=str(lora) if lora else None,
                                           lora_scale=adapter.scale if adapter else 1.0))
    if adapter is not None:
        raise BadInput("prereg.toml", f"adapters are applied by the server for backend {spec.backend!r}; "
                       "register the served adapter as its own model", field="adapter")
    if spec.backend == "openai":
        from .backends.openai import OpenAIBackend, OpenAIConfig

        return OpenAIBackend(OpenAIConfig(model=spec.source, base_url=spec.base_url))
    if spec.backend == "anthropic":
        from .backends.anthropic import AnthropicBackend, AnthropicConfig

        return AnthropicBackend(AnthropicConfig(model=spec.source, base_url=spec.base_url))
    raise BadInput("prereg.toml", f"unknown backend {spec.backend!r}", field="backend")
