"""Turn a registered model (+ quant, + adapters) into a live backend: resolve files, quantise, load.

One load per (model, quant, adapters): callers keep the returned backend and share it between
every arm (and judge) that uses the same triple.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import text
from .backends.base import Backend
from .errors import BadInput
from .models import embedded_model
from .quantize import QuantFile, quantize

if TYPE_CHECKING:  # the types only: the registration is a layer above the backends that open from it
    from registration.spec import AdapterSpec, ModelSpec, Runtime

__all__ = ["experiment_file", "model_source", "adapter_file", "quant_file", "open_backend"]


def experiment_file(source: str, exp_dir: Path) -> Path:
    path = Path(source)
    return path if path.is_absolute() else (exp_dir / path)


def model_source(spec: ModelSpec, exp_dir: Path) -> Path:
    if spec.source.startswith("embedded:"):
        return embedded_model(spec.source.split(":", 1)[1])
    return experiment_file(spec.source, exp_dir)


def adapter_file(spec: AdapterSpec, base: Path, exp_dir: Path) -> Path:
    if spec.source == "generated:demo":
        from .lora import demo_adapter

        return demo_adapter(base)
    path = experiment_file(spec.source, exp_dir)
    if not path.exists():
        raise BadInput(path, f"adapter {spec.name!r} file not found", field="source")
    return path


def quant_file(spec: ModelSpec, quant: str, exp_dir: Path, runtime: Runtime) -> QuantFile:
    imatrix = experiment_file(spec.imatrix, exp_dir) if spec.imatrix else None
    return quantize(model_source(spec, exp_dir), quant, threads=runtime.threads, imatrix=imatrix)


def chat_template(spec: ModelSpec, exp_dir: Path) -> tuple[str | None, str | None]:
    """The registered template file's text and path, or (None, None) to use the GGUF's own."""
    if not spec.chat_template:
        return None, None
    path = experiment_file(spec.chat_template, exp_dir)
    if not path.is_file():
        raise BadInput(path, f"chat template of model {spec.name!r} not found", field="chat_template")
    return text.read(path), str(path)


def open_backend(spec: ModelSpec, quant: str | None, adapters: tuple[AdapterSpec, ...] | None,
                 exp_dir: Path, runtime: Runtime) -> Backend:
    """The backend registered under the model's `backend`, opened from its spec (arms.backends.registry)."""
    from .backends.registry import backend_info

    adapters = tuple(adapters or ())
    info = backend_info(spec.backend)
    if adapters and not info.local:
        raise BadInput("prereg.toml", f"adapters are applied by the server for backend {spec.backend!r}; "
                       "register the served adapter as its own model", field="adapter")
    return info.open(spec, quant, adapters, exp_dir, runtime)
