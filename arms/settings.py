"""Settings verification: read back what a backend will really use and refuse when it differs.

Principle 2 (docs/principles.md): a trainer silently dropped a LoRA target list, replaced
settings with package defaults and switched thinking on. So before the first question of an
arm the runner compares the registration with what the backend reports (quant type and sha256
of the GGUF, adapters loaded and measurably applied, chat template sha256, sampling as sent and
as the backend says it used it, thinking mode, threads, context) and raises CheckFailed naming
every difference at once. What a backend cannot read back is recorded as "not verifiable", never
as a match. Checks only one backend can make are its BackendInfo.differences. Judges
are models too and go through the same check. Thinking is also checked on every reply: a model
registered with thinking off whose reply shows thinking stops the run (`check_reply`).
"""
from __future__ import annotations

from typing import Any

from core.errors import CheckFailed
from models.backends.base import NOT_USED, NOT_VERIFIABLE, READ_BACK, Backend, Generation, Reply
from models.backends.registry import REGISTRY
from models.spec import AdapterSpec, ModelSpec, Runtime

SENT_FIELDS = ("temperature", "top_p", "max_tokens", "seed", "stop", "thinking", "system", "thinking_budget", "effort")
ROW_FIELDS = ("backend", "model", "model_sha256", "file_type", "tensor_types", "chat_template_sha256",
              "chat_template_source",
              "thinking_switch", "loras", "lora_max_logit_change", "n_threads", "n_threads_batch", "n_ctx", "batch",
              "flash_attn",
              "cpu_extra_buffers", "cpu_extra_buffers_decision", "weight_buffers", "gpu_layers", "gpu_layers_offloaded",
              "gpu_layers_total",
              "base_urls", "base_url", "thinking_control", "thinking_types", "not_verifiable")


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
    read_back = eff.get("read_back") or {}
    for key in READ_BACK:
        got = read_back.get(key, NOT_VERIFIABLE)
        if got not in (NOT_VERIFIABLE, NOT_USED) and sent.get(key) is not None and got != registered.get(key):
            out.append(f"{key}: registered {registered.get(key)!r}, the backend used {got!r}")
    info = REGISTRY.get(eff.get("backend"))
    if info is not None:
        out.extend(info.differences(generation, eff, quant, model, adapters, runtime))
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


def verify_settings(backend: Backend, who: str, generation: Generation, quant: str, model: ModelSpec,
                    adapters: tuple[AdapterSpec, ...], runtime: Runtime) -> dict[str, Any]:
    """The effective settings (with `sent` and `read_back`), or CheckFailed listing each difference from the
    registration. A sampling setting the backend cannot read back is "not verifiable" in `read_back`, named in
    `not_verifiable`, and no difference: recorded, not claimed to match.

    `who` names the system in the message: "arm 'base'" or "judge 'local'"."""
    eff = backend.effective()
    sent = backend.sent(generation)
    eff = {**eff, "read_back": backend.read_back(generation)}
    problems = differences(generation, quant, model, adapters, runtime, eff, sent)
    if problems:
        raise CheckFailed(f"{who} at {quant}: {len(problems)} setting(s) differ from the registration:\n"
                          + "\n".join(f"  - {p}" for p in problems))
    unverified = [k for k in READ_BACK if sent.get(k) is not None and eff["read_back"].get(k) == NOT_VERIFIABLE]
    return {**eff, "sent": sent, "not_verifiable": unverified}


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
    if "read_back" in eff:  # read back for the registered seed, which is not this sample's: the seed is left out
        row["read_back"] = {k: v for k, v in eff["read_back"].items() if k != "seed"}
    return row
