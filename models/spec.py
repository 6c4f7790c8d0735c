"""The registered specs a backend is opened from: the model, its adapters, the machine's runtime.

Plain records, parsed from prereg.toml by registration.spec (which checks every value) and read by
the backends, the loader and the answer loop."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Runtime:
    """Machine settings recorded in run.json: llama.cpp threads are always explicit."""

    threads: int = 1
    n_ctx: int = 2048
    seed: int = 0  # llama.cpp context seed (each request also sends its own registered seed)
    cpu_extra_buffers: str | bool = "auto"  # llama.cpp weight repacking/AMX buffers; see models.llama_loader
    gpu_layers: int = 0  # llama.cpp layers offloaded to a GPU (n_gpu_layers)
    # `[runtime] batch`: llama.cpp sequences decoded together (1: one at a time); see models.backends.llama_parallel
    parallel_sequences: int = 1
    flash_attn: bool = False  # llama.cpp's fused attention kernel: faster on CPU too, rounds otherwise
    max_cost_usd: float | None = None  # the results folder's cost ceiling (judge.judging.budget); None: no ceiling


@dataclass(frozen=True)
class ModelSpec:
    """A model: for llama-cpp a GGUF `source` ("embedded:NAME" or a path); for HTTP a model name.

    `base_url` is the first server; `base_urls` all of them (one model served by a fleet is
    load-balanced across every URL). `sha256` maps a quant name ("source" for the file as
    given) to the file's registered sha256. `chat_template` is a registered template file that
    replaces the GGUF's own; `chat_template_sha256` pins whichever template is used.
    """

    name: str
    backend: str
    source: str
    base_url: str | None = None
    family: str | None = None  # e.g. "smollm2": used to warn about judge self-preference
    base_urls: tuple[str, ...] = ()
    sha256: dict[str, str] = field(default_factory=dict)
    chat_template: str | None = None
    chat_template_sha256: str | None = None
    imatrix: str | None = None  # importance matrix file for every derived quant
    concurrency: int = 4  # HTTP backends: requests in flight at once (in-process llama.cpp: always 1)
    thinking_control: str = "none"  # openai: how thinking is switched, one of THINKING_CONTROLS
    sampling_params: bool = False  # Anthropic-compatible server accepts temperature/top_p (the API does not)
    attempts: int = 4  # HTTP backends: tries per call before the answer becomes an `error` row
    timeout_s: float = 120.0  # HTTP backends: bounds each wait for data (not a whole call); a timeout is retried
    deadline_s: float = 600.0  # HTTP backends: bounds each attempt as a whole (models.deadline); retried the same way
    api_key_env: str | None = None  # HTTP backends: the variable holding the key (default: the SDK's usual one)
    structured: str = "json_schema"  # openai: how structured output is asked for, one of STRUCTURED
    # `provider_batch`: openai/anthropic answer through the provider's batch API (models.provider_batch), at half price
    provider_batch: bool = False
    batch_poll_s: float = 60.0  # batch: seconds between two looks at a submitted batch
    batch_max_requests: int | None = None  # batch: requests per batch (None: the provider's limit)
    batch_max_bytes: int | None = None  # batch: bytes of requests per batch (None: the provider's limit)
    price_input: float | None = None  # USD per million input tokens, for the report's cost (None: not shown)
    price_output: float | None = None  # USD per million output tokens

    def urls(self) -> tuple[str, ...]:
        return self.base_urls or ((self.base_url,) if self.base_url else ())


@dataclass(frozen=True)
class AdapterSpec:
    """A LoRA adapter: "generated:demo" (built by models.lora) or a path to a GGUF adapter."""

    name: str
    source: str
    scale: float = 1.0
    sha256: str | None = None
