"""The glue protocol: deterministic code around a model (retrieve, prompt, call, enforce format, post-process).

User glue is a function with the signature of `Glue`, registered as "file.py:function" (a Python file
inside the experiment folder, so the seal covers it) or "package.module:function" (imported from the
Python path). Glue over base and glue over trained share this code and differ only in `call_model`.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import threading
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


def glue_file(import_path: str, exp_dir: Path) -> Path | None:
    """The file of a glue registered as "file.py:function" (relative to the experiment folder, refused outside
    it); None for "package.module:function"."""
    module_name = import_path.partition(":")[0]
    if not module_name.endswith(".py"):
        return None
    root = Path(exp_dir).resolve()
    path = (root / module_name).resolve()
    if not path.is_relative_to(root):
        raise BadInput(root / "prereg.toml", f"glue {import_path!r} resolves to {path}, outside the experiment "
                       f"folder {root}: the seal cannot cover it; put the file inside the folder", field="glue")
    if not path.is_file():
        raise BadInput(root / "prereg.toml", f"glue {import_path!r}: no file {path}", field="glue")
    return path


_lock = threading.Lock()


def _import_file(path: Path):
    """A glue file as a module, imported once per process under a name unique to its path."""
    name = f"_glue_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    with _lock:
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        return sys.modules[name]


def load_glue(import_path: str, exp_dir: Path) -> Glue:
    module_name, _, attr = import_path.partition(":")
    file = Path(exp_dir) / "prereg.toml"
    try:
        path = glue_file(import_path, exp_dir)
        module = importlib.import_module(module_name) if path is None else _import_file(path)
        fn = getattr(module, attr)
    except (ImportError, AttributeError) as e:
        raise BadInput(file, f"glue {import_path!r} cannot be imported: {e}", field="glue") from None
    if not callable(fn):
        raise BadInput(file, f"glue {import_path!r} is not callable", field="glue")
    return fn
