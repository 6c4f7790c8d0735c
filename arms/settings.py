"""Settings verification: read back what a backend will really use and refuse when it differs.

Principle 2 (docs/principles.md): a trainer silently dropped a LoRA target list, replaced
settings with package defaults and switched thinking on. So before the first question of an
arm the runner compares the registration with what the backend reports (quant type and sha256
of the GGUF, adapters loaded and measurably applied, chat template sha256, sampling as sent,
thinking mode, threads, context) and raises CheckFailed naming every difference at once. Judges
are models too and go through the same check. Thinking is also checked on every reply: a model
registered with thinking off whose reply shows thinking stops the run (`check_reply`).
"""
from __future__ import annotations

from typing import Any

from .backends.base import Backend, Generation, Reply
from .errors import CheckFailed
from .spec import AdapterSpec, ModelSpec, Runtime

SENT_FIELDS = ("temperature", "top_p", "max_tokens", "seed", "stop", "thinking", "system", "thinking_budget", "effort")
ROW_FIELDS = ("backend", "model", "model_sha256", "file_type", "tensor_types", "chat_template_sha256", "chat_template_source",
              "thinking_switch", "loras", "lora_max_logit_change", "n_threads", "n_threads_batch", "n_ctx",
              "cpu_extra_buffers", "cpu_extra_buffers_decision", "weight_buffers",
              "base_urls", "base_url", "thinking_control", "thinking_types")


def _show(value: Any) -> str:
    return "nothing (not sent or not honoured)" if value is None else repr(value)


def differences(generation: Generation, quant: str, model: ModelSpec, adapters: tuple[AdapterSpec, ...],
                runtime: Runtime, eff: dict[str, Any], sent: dict[str, Any]) -> list[str]:
    """Every way the backend's read-back differs from the registration, one line each."""
    out = []
    registered = generation.to_dict()
    for key in SENT_FIELDS:
        want, got = registered.get(key), sent.get(key)
        if key == "thinking" and want is False and got is None:
            continue  # registered off, and there is no switch to turn it on
        if want != got:
            out.append(f"{key}: registered {want!r}, the backend sends {_show(got)}")
    if eff.get("backend") == "llama-cpp":
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
        for a, lo in zip(adapters, loaded):
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
        if eff["n_ctx"] != runtime.n_ctx:
            out.append(f"n_ctx: registered {runtime.n_ctx}, llama.cpp uses {eff['n_ctx']}")
    if "structured" in eff and eff["structured"] != model.structured:
        out.append(f"structured: registered {model.structured!r}, the backend asks for {eff['structured']!r}")
    types = eff.get("thinking_types")
    mode = "enabled" if generation.thinking else "disabled"
    if isinstance(types, list) and mode not in types:
        out.append(f"thinking: registered {mode}, the API says model {model.source!r} supports only {types}")
    for url, served in (eff.get("served_models") or {}).items():
        if isinstance(served, list) and model.source not in served:
            out.append(f"model: registered {model.source!r}, the server at {url} serves {served}")
    return out


def _extra_buffer_differences(eff: dict[str, Any], runtime: Runtime) -> list[str]:
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


def verify_settings(backend: Backend, who: str, generation: Generation, quant: str, model: ModelSpec,
                    adapters: tuple[AdapterSpec, ...], runtime: Runtime) -> dict[str, Any]:
    """The effective settings (with `sent`), or CheckFailed listing each difference from the registration.

    `who` names the system in the message: "arm 'base'" or "judge 'local'"."""
    eff = backend.effective()
    sent = backend.sent(generation)
    problems = differences(generation, quant, model, adapters, runtime, eff, sent)
    if problems:
        raise CheckFailed(f"{who} at {quant}: {len(problems)} setting(s) differ from the registration:\n"
                          + "\n".join(f"  - {p}" for p in problems))
    return {**eff, "sent": sent}


def check_reply(who: str, generation: Generation, reply: Reply) -> None:
    """Thinking was switched on unasked (docs/motivating-experiment.md, section 3). A reply that shows thinking
    when thinking is registered off stops the run. (Thinking registered on but not shown is recorded
    in the row, not refused: a model may answer a trivial question without a visible thought.)"""
    if reply.thinking and not generation.thinking:
        raise CheckFailed(f"{who}: thinking is registered off, but the backend's reply shows thinking "
                          f"({ {k: v for k, v in reply.raw.items() if 'think' in k or 'reason' in k} }): the server "
                          "or model switched it on; register thinking = true or fix the server")


def row_effective(eff: dict[str, Any], sample_seed: int | None) -> dict[str, Any]:
    """The compact part of the effective settings recorded in every answer row."""
    row = {k: eff[k] for k in ROW_FIELDS if k in eff}
    row["sent"] = {**eff["sent"], "seed": sample_seed if eff["sent"].get("seed") is not None else None}
    return row
