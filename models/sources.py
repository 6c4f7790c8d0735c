"""Where a registered model's files are: its GGUF source, the derived quant, its adapters and its
chat template, resolved against the experiment folder (quantised and generated on first use, cached)."""
from __future__ import annotations

from pathlib import Path

from core import text
from core.errors import BadInput

from .files import embedded_model
from .quantize import QuantFile, quantize
from .spec import AdapterSpec, ModelSpec, Runtime


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
