"""The glue protocol: deterministic code around a model (retrieve, prompt, call, enforce format, post-process).

User glue is a function with the signature of `Glue`, registered as "file.py:function" (a Python file
inside the experiment folder, so the seal covers it) or "package.module:function" (imported from the
Python path). Glue over base and glue over trained share this code and differ only in `call_model`.

Code in an experiment folder runs only as the sealed bytes of its source: the glue file, and every module
imported from the folder while it is registered (a sibling module the glue imports, a package beside it),
is compiled from the bytes registration.seal.sealed_bytes reads and checks against the MANIFEST, and no
bytecode is read from or written into the folder (a `.pyc` there could run instead of the source the
seal and binding.json vouch for, and writing one would itself break the seal). A module the folder
offers only as bytecode or as a compiled extension is refused.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from core.errors import BadInput
from models.backends.base import Reply
from registration.questions import Question
from registration.seal import sealed_bytes

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


_lock = threading.RLock()  # a module run under it may itself load glue


class SourceOnly(importlib.abc.Loader):
    """Runs a module from the bytes of its source file, read once and compiled as they are: no bytecode is read or
    written. In an experiment folder (`exp_dir`) the bytes must be the sealed ones (registration.seal.sealed_bytes),
    so a file unlisted, or edited after the seal was checked, is refused."""

    def __init__(self, path: Path, exp_dir: Path | None):
        self.path, self.exp_dir = Path(path), exp_dir

    def source(self) -> bytes:
        return self.path.read_bytes() if self.exp_dir is None else sealed_bytes(self.exp_dir, self.path)

    def create_module(self, spec):
        return None  # the default module

    def exec_module(self, module) -> None:
        exec(compile(self.source(), str(self.path), "exec", dont_inherit=True), module.__dict__)

    def get_source(self, name: str) -> str:
        return importlib.util.decode_source(self.source())


class SealedFolders(importlib.abc.MetaPathFinder):
    """Sits just before Python's own path finder and resolves every import exactly as it does; when the module
    it finds lies in a registered experiment folder, it is loaded by `SourceOnly` from its sealed bytes, or
    refused when the folder holds it only as bytecode or a compiled extension. Other imports are left alone."""

    def __init__(self) -> None:
        self.roots: set[Path] = set()

    def root_of(self, path: str | None) -> Path | None:
        if not path:
            return None
        where = Path(path).resolve()
        return next((r for r in self.roots if where.is_relative_to(r)), None)

    def find_spec(self, name, path=None, target=None):
        if not self.roots:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        root = self.root_of(spec.origin) if spec is not None and spec.has_location else None
        if root is None:
            return None  # not in an experiment folder (or a namespace package: a folder, no code): Python's own
        if not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            raise BadInput(spec.origin, f"module {name!r} is imported from the experiment folder {root}, which holds "
                           "it only as bytecode or a compiled extension: code is run there only from sealed Python "
                           "source")
        return importlib.util.spec_from_file_location(name, spec.origin, loader=SourceOnly(spec.origin, root),
                                                      submodule_search_locations=spec.submodule_search_locations)


_folders = SealedFolders()


def sealed_code(exp_dir: Path) -> None:
    """From now on in this process, modules imported from `exp_dir` run only from their sealed source."""
    root = Path(exp_dir).resolve()
    with _lock:
        if _folders not in sys.meta_path:
            at = next((i for i, f in enumerate(sys.meta_path) if f is importlib.machinery.PathFinder),
                      len(sys.meta_path))
            sys.meta_path.insert(at, _folders)
        _folders.roots.add(root)


def import_source(path: Path, name: str, exp_dir: Path | None = None):
    """A Python file as a module, run from its source (from its sealed bytes inside experiment folder `exp_dir`, whose
    other modules it imports are then sealed too), once per process under `name`."""
    if exp_dir is not None:
        sealed_code(exp_dir)
    with _lock:
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, path, loader=SourceOnly(path, exp_dir))
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        return sys.modules[name]


def glue_source(import_path: str, exp_dir: Path) -> Path:
    """The source file of a glue, found as the run will import it (without running it): the file in the
    experiment folder, or the module's file on the Python path."""
    file, module_name = Path(exp_dir) / "prereg.toml", import_path.partition(":")[0]
    path = glue_file(import_path, exp_dir)
    if path is not None:
        return path
    sealed_code(exp_dir)
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError) as e:
        raise BadInput(file, f"glue {import_path!r} cannot be imported: {e}", field="glue") from None
    if spec is None:
        raise BadInput(file, f"glue {import_path!r} cannot be imported: no module named {module_name!r}", field="glue")
    source = spec.origin if spec.has_location else None
    if not source or not source.endswith(".py"):
        raise BadInput(file, f"glue {import_path!r} has no Python source file to hash ({source})", field="glue")
    return Path(source).resolve()


def load_glue(import_path: str, exp_dir: Path) -> Glue:
    module_name, _, attr = import_path.partition(":")
    file = Path(exp_dir) / "prereg.toml"
    sealed_code(exp_dir)
    try:
        path = glue_file(import_path, exp_dir)
        module = importlib.import_module(module_name) if path is None else import_source(
            path, f"_glue_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}", exp_dir)
        fn = getattr(module, attr)
    except (ImportError, AttributeError) as e:
        raise BadInput(file, f"glue {import_path!r} cannot be imported: {e}", field="glue") from None
    except SyntaxError as e:
        raise BadInput(e.filename or file, f"glue {import_path!r} cannot be imported: {e.msg}", line=e.lineno,
                       field="glue") from None
    if not callable(fn):
        raise BadInput(file, f"glue {import_path!r} is not callable", field="glue")
    return fn
