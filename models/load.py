"""Turn a registered model (+ quant, + adapters) into a live backend, through the backend its spec names.

One load per (model, quant, adapters): callers keep the returned backend and share it between
every arm (and judge) that uses the same triple. Where the model's files come from is models.sources.
"""
from __future__ import annotations

from pathlib import Path

from core.errors import BadInput

from .backends.base import Backend
from .backends.registry import backend_info
from .spec import AdapterSpec, ModelSpec, Runtime

__all__ = ["open_backend"]


def open_backend(spec: ModelSpec, quant: str | None, adapters: tuple[AdapterSpec, ...] | None,
                 exp_dir: Path, runtime: Runtime) -> Backend:
    """The backend registered under the model's `backend`, opened from its spec (models.backends.registry)."""
    adapters = tuple(adapters or ())
    info = backend_info(spec.backend)
    if adapters and not info.local:
        raise BadInput("prereg.toml", f"adapters are applied by the server for backend {spec.backend!r}; "
                       "register the served adapter as its own model", field="adapter")
    return info.open(spec, quant, adapters, exp_dir, runtime)
