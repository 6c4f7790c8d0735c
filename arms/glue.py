"""The glue protocol: deterministic code around a model (retrieve, prompt, call, enforce format, post-process).

User glue is a function referenced by import path ("package.module:function") with the signature
of `Glue`. Glue over base and glue over trained share this code and differ only in `call_model`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from .backends.base import Reply
from .errors import BadInput
from .questions import Question

CallModel = Callable[[list[tuple[str, str]]], Reply]


@dataclass(frozen=True)
class GlueResult:
    answer: str
    trace: dict[str, Any] = field(default_factory=dict)  # retrieved ids, prompt, raw model output


class Glue(Protocol):
    def __call__(self, question: Question, call_model: CallModel, experiment_dir: Path) -> GlueResult: ...


def load_glue(import_path: str, *, file: str = "prereg.toml") -> Glue:
    module_name, _, attr = import_path.partition(":")
    try:
        module = importlib.import_module(module_name)
        fn = getattr(module, attr)
    except (ImportError, AttributeError) as e:
        raise BadInput(file, f"glue {import_path!r} cannot be imported: {e}", field="glue") from None
    if not callable(fn):
        raise BadInput(file, f"glue {import_path!r} is not callable", field="glue")
    return fn
