"""Every backend the registration may name, by name. A new backend is its module (with its `INFO`) plus a line here."""
from __future__ import annotations

from core.errors import BadInput

from . import anthropic, llama_cpp, openai
from .base import BackendInfo

REGISTRY: dict[str, BackendInfo] = {info.name: info for info in (
    llama_cpp.INFO,
    openai.INFO,
    anthropic.INFO,
)}


def backend_info(name: str) -> BackendInfo:
    """The backend registered under `name`; BadInput (the registration's fault) for any other."""
    if name not in REGISTRY:
        raise BadInput("prereg.toml", f"unknown backend {name!r}; known: {', '.join(REGISTRY)}", field="backend")
    return REGISTRY[name]
