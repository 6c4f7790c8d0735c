"""What an in-process llama.cpp really built, read back and held against the registration.

The sampler chain of a call (which samplers are in it and which are active: llama.cpp names an inactive one with a
leading "?", and the seed of its `dist` sampler), and the settings read back from the loaded model (the GGUF, chat
template, adapters, threads, buffers, GPU layers, context), each compared with what the registration says
(`differences`, the llama-cpp backend's BackendInfo.differences).
"""
from __future__ import annotations

from typing import Any

from .base import NOT_USED, NOT_VERIFIABLE, Generation


def chain_read_back(sampler) -> dict[str, Any]:
    """The registered sampling as a llama.cpp sampler chain shows it: greedy (temperature 0), or the seed of its
    `dist` sampler and whether top-p is off; a temperature or top_p value has no getter (not verifiable)."""
    import llama_cpp

    chain = [llama_cpp.llama_sampler_name(llama_cpp.llama_sampler_chain_get(sampler, i)).decode()
             for i in range(llama_cpp.llama_sampler_chain_n(sampler))]
    if "greedy" in chain:
        return {"temperature": 0.0, "top_p": NOT_USED, "seed": NOT_USED, "sampler_chain": chain}
    return {"temperature": NOT_VERIFIABLE, "top_p": 1.0 if "?top-p" in chain else NOT_VERIFIABLE,
            "seed": int(llama_cpp.llama_sampler_get_seed(sampler)) if "dist" in chain else NOT_VERIFIABLE,
            "sampler_chain": chain}


def sampler_differences(g: Generation, chain: list[str]) -> list[str]:
    """How the sampler chain llama.cpp built differs from the registered sampling: greedy exactly when the
    temperature is 0, top_p active exactly when below 1, and llama-cpp-python's extra samplers all inactive."""
    out = []
    greedy = "greedy" in chain
    if greedy != (g.temperature == 0):
        out.append(f"temperature: registered {g.temperature!r}, llama.cpp sampled "
                   f"{'greedily' if greedy else 'at a temperature above 0'} (sampler chain {chain})")
    if not greedy and ("top-p" in chain) != (g.top_p is not None and g.top_p < 1):
        out.append(f"top_p: registered {g.top_p!r}, llama.cpp's top-p sampler is "
                   f"{'active' if 'top-p' in chain else 'off'} (sampler chain {chain})")
    active = [name for name in ("penalties", "top-k", "min-p", "typical") if name in chain]
    if active:
        out.append(f"sampling: only the registered settings may sample, but llama.cpp's {active} sampler(s) are "
                   f"active (sampler chain {chain})")
    return out


def differences(g: Generation, eff: dict[str, Any], quant: str, model, adapters, runtime) -> list[str]:
    """What only an in-process llama.cpp reads back: the GGUF, template, adapters, threads, buffers, sampler chain."""
    out = []
    chain = (eff.get("read_back") or {}).get("sampler_chain")
    if chain is not None:
        out.extend(sampler_differences(g, chain))
    if quant != "source" and eff["file_type"] != f"MOSTLY_{quant}":
        out.append(f"quant: registered {quant}, the model file says {eff['file_type']}")
    want_sha = model.sha256.get(quant)
    if want_sha and want_sha != eff["model_sha256"]:
        out.append(f"model sha256 ({quant}): registered {want_sha}, the loaded file is {eff['model_sha256']}")
    if model.chat_template_sha256 and model.chat_template_sha256 != eff["chat_template_sha256"]:
        out.append(f"chat template sha256: registered {model.chat_template_sha256}, the template in use "
                   f"({eff['chat_template_source']}) is {eff['chat_template_sha256']}")
    loaded = eff["loras"]
    if len(loaded) != len(adapters):
        out.append(f"adapters: registered {[a.name for a in adapters]}, {len(loaded)} loaded")
    for a, lo in zip(adapters, loaded, strict=False):
        if a.sha256 and a.sha256 != lo["sha256"]:
            out.append(f"adapter {a.name} sha256: registered {a.sha256}, the loaded file is {lo['sha256']}")
        if a.scale != lo["scale"]:
            out.append(f"adapter {a.name} scale: registered {a.scale}, applied {lo['scale']}")
    if adapters and any(a.scale != 0 for a in adapters) and not eff["lora_max_logit_change"]:
        out.append(f"adapters {[a.name for a in adapters]}: loaded, but they change no logit (not applied)")
    if eff["n_threads"] != runtime.threads or eff["n_threads_batch"] != runtime.threads:
        out.append(f"threads: registered {runtime.threads}, llama.cpp uses "
                   f"{eff['n_threads']}/{eff['n_threads_batch']}")
    if "cpu_extra_buffers" in eff:  # rows written before the setting existed have none of it
        out.extend(_extra_buffer_differences(eff, runtime))
    if "gpu_layers" in eff:  # rows written before the setting existed have none of it
        out.extend(_gpu_differences(eff, runtime))
    if eff["n_ctx"] != runtime.n_ctx:
        out.append(f"n_ctx: registered {runtime.n_ctx}, llama.cpp uses {eff['n_ctx']}")
    if eff.get("flash_attn", False) != runtime.flash_attn:  # rows written before the setting existed: off
        out.append(f"flash_attn: registered {runtime.flash_attn}, llama.cpp's context has it "
                   f"{'on' if eff.get('flash_attn') else 'off'}")
    if eff.get("batch", 1) != runtime.parallel_sequences:  # rows written before the setting existed: one at a time
        out.append(f"batch: registered {runtime.parallel_sequences}, llama.cpp decodes {eff['batch']} sequence(s) "
                   "together")
    return out


def _gpu_differences(eff: dict[str, Any], runtime) -> list[str]:
    """Registered GPU layers against the struct llama.cpp got and the layers its load log says it offloaded."""
    out = []
    if eff["gpu_layers"] != runtime.gpu_layers:
        out.append(f"gpu_layers: registered {runtime.gpu_layers}, llama.cpp was loaded with {eff['gpu_layers']}")
    total = eff.get("gpu_layers_total")
    expected = min(runtime.gpu_layers, total) if total is not None else 0 if not runtime.gpu_layers else None
    if expected is None or eff["gpu_layers_offloaded"] != expected:
        out.append(f"gpu_layers: registered {runtime.gpu_layers}, llama.cpp offloaded {eff['gpu_layers_offloaded']}"
                   f"{f' of {total}' if total is not None else ''} layers to a GPU")
    return out


def _extra_buffer_differences(eff: dict[str, Any], runtime) -> list[str]:
    out = []
    decided = eff["cpu_extra_buffers_decision"]
    if eff["cpu_extra_buffers"] != decided["use"]:
        out.append(f"cpu_extra_buffers: decided {decided['use']} ({decided['reason']}), llama.cpp was loaded with "
                   f"{eff['cpu_extra_buffers']}")
    if decided["registered"] != runtime.cpu_extra_buffers:
        out.append(f"cpu_extra_buffers: registered {runtime.cpu_extra_buffers!r}, the backend decided from "
                   f"{decided['registered']!r}")
    extra = [b for b in eff["weight_buffers"] if b not in ("CPU", "CPU_Mapped")]
    if not decided["use"] and extra:
        out.append(f"cpu_extra_buffers: off, but llama.cpp put weights in {extra}")
    if decided["cpu_amx"] and "AMX" in eff["weight_buffers"]:
        out.append("cpu_extra_buffers: llama.cpp put weights in AMX buffers on a CPU where they crash")
    return out
