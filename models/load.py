"""Turn a registered model (+ quant, + adapters) into a live backend: resolve files, quantise, load.

One load per (model, quant, adapters): callers keep the returned backend and share it between
every arm (and judge) that uses the same triple.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import BadInput

from .backends.base import Backend

if TYPE_CHECKING:  # the types only: the registration is a layer above the backends that open from it
    from .spec import AdapterSpec, ModelSpec, Runtime

__all__ = ["open_backend"]


def open_backend(spec: ModelSpec, quant: str | None, adapters: tuple[AdapterSpec, ...] | None,
                 exp_dir: Path, runtime: Runtime) -> Backend:
    """The backend registered under the model's `backend`, opened from its spec (models.backends.registry)."""
    from .backends.registry import backend_info

    adapters = tuple(adapters or ())
    info = backend_info(spec.backend)
    if adapters and not info.local:
        raise BadInput("prereg.toml", f"adapters are applied by the server for backend {spec.backend!r}; "
                       "register the served adapter as its own model", field="adapter")
    return info.open(spec, quant, adapters, exp_dir, runtime)
