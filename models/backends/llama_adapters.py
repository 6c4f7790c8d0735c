"""LoRA adapters on an in-process llama.cpp model: loaded, set on its context at their registered scales, and
proven applied by the change they make to the next-token logits of a probe prompt (0 would mean they change
nothing: the run's settings check refuses it)."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

from core.errors import BadInput, CheckFailed


@dataclass(frozen=True)
class Lora:
    path: str
    scale: float = 1.0


def apply_adapters(llm, loras: tuple[Lora, ...], model_path: str, use_extra_buffers: bool, probe: list[int],
                   handles: list) -> float:
    """Load every adapter on `llm` (each handle appended to `handles` as it is loaded, so the caller frees those
    loaded when a later one fails), set them on its context, and return the largest change they make to the
    logits after the `probe` tokens."""
    import llama_cpp

    from ..lora import check_adapter

    for lo in loras:
        check_adapter(Path(model_path), Path(lo.path), use_extra_buffers)  # llama-cpp-python segfaults otherwise
        handle = llama_cpp.llama_adapter_lora_init(llm.model, lo.path.encode())
        if not handle:
            raise BadInput(lo.path, "llama.cpp could not load this LoRA adapter")
        handles.append(handle)
    before = _last_logits(llm, probe)
    n = len(handles)
    scales = (ctypes.c_float * n)(*(lo.scale for lo in loras))
    if llama_cpp.llama_set_adapters_lora(llm.ctx, (llama_cpp.llama_adapter_lora_p_ctypes * n)(*handles), n,
                                         scales) != 0:
        raise CheckFailed(f"llama.cpp refused to set the LoRA adapters {[lo.path for lo in loras]}")
    after = _last_logits(llm, probe)
    llm.reset()  # the probe's KV cache must not be reused as a prompt prefix
    return round(float(abs(after - before).max()), 6)


def free_adapters(handles: list) -> None:
    import llama_cpp

    for handle in handles:
        llama_cpp.llama_adapter_lora_free(handle)
    handles.clear()


def _last_logits(llm, tokens: list[int]):
    """Logits of the next token after `tokens`, from a fresh context state."""
    import llama_cpp
    import numpy as np

    llm.reset()
    llm.eval(tokens)
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()
