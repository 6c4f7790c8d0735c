"""The one place that loads llama.cpp in process: arms, local judges, the audit reader, LoRA checks, benchmarks.

Why one place: on Intel CPUs with AMX (most current cloud Xeons) the llama.cpp that
llama-cpp-python 0.3.36 compiles puts weights in its AMX "extra buffer" type, and the first
matrix product of a prompt of a few dozen tokens then dies with SIGILL on a worker thread that
was never granted AMX tile state (an open upstream bug). Loading with the model parameter
`use_extra_bufts = False` avoids that buffer type. `Llama(...)` has no argument for it, so every
load goes through `load_llama`, which sets it on the parameter struct before the model is read,
and reads back which weight buffers llama.cpp really allocated (from llama.cpp's own load log).

The decision (`decide_extra_buffers`): off when the build has AMX and the CPU reports it;
otherwise as registered in `[runtime] cpu_extra_buffers` ("auto" = on). It is recorded in
run.json's effective settings and verified like `threads`. A crash that this does not foresee
(the next bug) is caught by a child-process probe (`probe`) before the first real call, and by
the CLIs' crash supervisor (`core.crash`) after it.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from core import crash
from core.crash import signal_name
from core.errors import BadInput

AMX_CPU_FLAGS = ("amx_tile", "amx_int8", "amx_bf16")
REGISTRABLE = ("auto", True, False)
BUFFER_LINE = re.compile(r"^\S*:\s*(\S+) model buffer size")  # "load_tensors:   CPU_REPACK model buffer size = ..."
OFFLOAD_LINE = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")  # "load_tensors: offloaded 5/31 layers to GPU"
PROBE_PROMPT = ("The Port Alder cycle-hire scheme lends bicycles from docks across the town. A member may hire a "
                "bicycle for up to three hours at a time, must return it to any dock with a free space, and is "
                "charged a late fee for every started half hour after that. Question: how long may a member keep "
                "a bicycle, and what happens when it is returned late? Answer in one sentence:")


@dataclass(frozen=True)
class ExtraBuffers:
    """Whether llama.cpp may put weights in the CPU's extra buffer types (repacked, AMX), and why."""

    registered: str | bool
    use: bool
    reason: str
    build_amx: bool
    cpu_amx: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def registrable(value: Any) -> bool:
    """"auto", true or false: the one rule for `[runtime] cpu_extra_buffers` (1 and 0 are not booleans)."""
    return any(value is v or (isinstance(value, str) and value == v) for v in REGISTRABLE)


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def build_features(system_info: str) -> dict[str, str]:
    """`llama_print_system_info()` ("CPU : SSE3 = 1 | AMX_INT8 = 1 | REPACK = 1 | ...") as a dict."""
    out = {}
    for part in re.split(r"[|\n]", system_info):
        if "=" in part:
            key, _, value = part.partition("=")
            out[key.split(":")[-1].strip()] = value.strip()
    return out


def system_info() -> str:
    import llama_cpp

    return llama_cpp.llama_print_system_info().decode("utf-8", "replace")


def decide_extra_buffers(registered: str | bool, info: str, flags: frozenset[str]) -> ExtraBuffers:
    """Off when the build has AMX and the CPU reports it (SIGILL otherwise); else as registered, "auto" = on."""
    if not registrable(registered):
        raise BadInput("prereg.toml", "[runtime] cpu_extra_buffers must be \"auto\", true or false, "
                       f"got {registered!r}",
                       field="cpu_extra_buffers")
    build_amx = build_features(info).get("AMX_INT8") == "1"
    cpu_amx = any(f in flags for f in AMX_CPU_FLAGS)
    if build_amx and cpu_amx:
        return ExtraBuffers(registered, False, "off: this llama.cpp build uses AMX and the CPU reports AMX "
                            "(llama.cpp's AMX buffers crash with SIGILL on such CPUs)", build_amx, cpu_amx)
    if registered == "auto":
        return ExtraBuffers(registered, True, "on: auto, and the AMX crash does not apply (build AMX "
                            f"{'yes' if build_amx else 'no'}, CPU AMX {'yes' if cpu_amx else 'no'})",
                            build_amx, cpu_amx)
    return ExtraBuffers(registered, bool(registered), f"{'on' if registered else 'off'}: as registered",
                        build_amx, cpu_amx)


_decided: dict[Any, ExtraBuffers] = {}


def machine_amx() -> tuple[bool, bool]:
    """(this llama.cpp build uses AMX, this CPU reports AMX)."""
    d = extra_buffers("auto")
    return d.build_amx, d.cpu_amx


def extra_buffers(registered: str | bool = "auto") -> ExtraBuffers:
    """The decision on this machine and this build (computed once per process)."""
    if registered not in _decided:
        _decided[registered] = decide_extra_buffers(registered, system_info(), cpu_flags())
    return _decided[registered]


def model_params(use_extra_buffers: bool):
    """llama.cpp's default model parameters with the extra-buffer decision applied, CPU only."""
    import llama_cpp

    params = llama_cpp.llama_model_default_params()
    params.n_gpu_layers = 0
    params.use_extra_bufts = use_extra_buffers
    return params


_load_lock = threading.Lock()


@contextlib.contextmanager
def _load_log() -> Iterator[list[str]]:
    """Collect llama.cpp's log lines while loading (which weight buffers it allocates), then restore the
    callback llama-cpp-python installed."""
    import llama_cpp
    from llama_cpp import _logger

    lines: list[str] = []

    @llama_cpp.llama_log_callback
    def collect(level, text, user_data):  # noqa: ARG001 - ctypes signature
        lines.append(text.decode("utf-8", "replace"))

    llama_cpp.llama_log_set(collect, ctypes.c_void_p(0))
    try:
        yield lines
    finally:
        llama_cpp.llama_log_set(_logger.llama_log_callback, ctypes.c_void_p(0))


def weight_buffers(log_lines: list[str]) -> list[str]:
    """The buffer types llama.cpp put the weights in ("CPU_Mapped", "CPU_REPACK", "AMX"), from its load log."""
    text = "".join(log_lines)
    return sorted({m.group(1) for m in (BUFFER_LINE.match(line.strip()) for line in text.splitlines()) if m})


def gpu_offload() -> bool:
    """Can this llama.cpp build put layers on a GPU at all? (A CPU-only build accepts n_gpu_layers and ignores it.)"""
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def check_gpu_layers(gpu_layers: int, file: str | Path = "prereg.toml", line: int | None = None) -> None:
    """Refuse GPU offload on a build that cannot do it, before any call: it would run on the CPU unannounced."""
    if gpu_layers and not gpu_offload():
        raise BadInput(file, f"[runtime] gpu_layers = {gpu_layers}, but this llama-cpp-python build has no GPU "
                       "support (llama_supports_gpu_offload() is false; system info: "
                       f"{system_info().strip()}). Register gpu_layers = 0, or install a GPU build, e.g. "
                       "CMAKE_ARGS=\"-DGGML_CUDA=on\" pip install --force-reinstall --no-cache-dir "
                       "llama-cpp-python==0.3.36", field="gpu_layers", line=line)


def gpu_layers_offloaded(log_lines: list[str]) -> tuple[int, int | None]:
    """(layers llama.cpp put on a GPU, layers it could have) from its load log; (0, None) when it printed no
    offload line (a CPU-only build prints none)."""
    m = OFFLOAD_LINE.search("".join(log_lines))
    return (int(m.group(1)), int(m.group(2))) if m else (0, None)


@contextlib.contextmanager
def _default_params(use_extra_buffers: bool) -> Iterator[None]:
    """While inside, the parameter struct `llama_cpp.Llama` starts from carries the extra-buffer decision
    (`Llama(...)` has no argument for it)."""
    import llama_cpp.llama as llama_module

    default = llama_module.llama_cpp.llama_model_default_params

    def params():
        p = default()
        p.use_extra_bufts = use_extra_buffers
        return p

    with _load_lock:
        llama_module.llama_cpp.llama_model_default_params = params
        try:
            yield
        finally:
            llama_module.llama_cpp.llama_model_default_params = default


def load_llama(model_path: str | Path, *, threads: int, n_ctx: int, seed: int = 0, use_extra_buffers: bool,
               gpu_layers: int = 0, **kwargs: Any):
    """`llama_cpp.Llama` with explicit threads, GPU layers and the extra-buffer decision; `llm.weight_buffers`
    says where the weights really went and `llm.gpu_offloaded` (layers, of how many) what went to a GPU. Every
    in-process load of a model for inference comes through here."""
    import llama_cpp

    check_gpu_layers(gpu_layers)
    build_amx, cpu_amx = machine_amx()
    what = (f"loading {model_path} with llama.cpp (threads {threads}, CPU extra buffers "
            f"{'on' if use_extra_buffers else 'off'}, GPU layers {gpu_layers})")
    with (crash.step(what, extra_buffers=use_extra_buffers, build_amx=build_amx, cpu_amx=cpu_amx),
            _default_params(use_extra_buffers), _load_log() as log):
        llm = llama_cpp.Llama(model_path=str(model_path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                              seed=seed, n_gpu_layers=gpu_layers, verbose=False, **kwargs)
    llm.weight_buffers = weight_buffers(log)
    llm.gpu_offloaded = gpu_layers_offloaded(log)
    if bool(llm.model_params.use_extra_bufts) != use_extra_buffers:  # the struct llama.cpp was given
        llm.close()
        raise RuntimeError(f"llama-cpp-python did not pass use_extra_bufts={use_extra_buffers} to llama.cpp")
    return llm


def serve(argv: list[str]) -> None:
    """Run `python -m llama_cpp.server ARGS` with this machine's extra-buffer decision applied to its model
    loads (the server has no option for it): `python -m models.llama_loader serve ARGS`."""
    import runpy

    decision = extra_buffers("auto")
    print(f"llama_loader: CPU extra buffers {decision.reason}", file=sys.stderr)
    with _default_params(decision.use):
        sys.argv = ["llama_cpp.server", *argv]
        runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


@contextlib.contextmanager
def loaded_model(model_path: str | Path, use_extra_buffers: bool) -> Iterator[Any]:
    """A bare llama.cpp model handle (no context), for checks that need only the weights' shapes."""
    import llama_cpp

    build_amx, cpu_amx = machine_amx()
    with crash.step(f"loading {model_path} with llama.cpp (bare model)", extra_buffers=use_extra_buffers,
                    build_amx=build_amx, cpu_amx=cpu_amx):
        model = llama_cpp.llama_model_load_from_file(str(model_path).encode(), model_params(use_extra_buffers))
    if not model:
        raise BadInput(model_path, "llama.cpp could not load the model")
    try:
        yield model
    finally:
        llama_cpp.llama_model_free(model)


def load_vocab(model_path: str | Path) -> Any:
    """A model's vocabulary alone: tokenizes and reads metadata, with no weights, no context, no forward pass.

    llama-cpp-python's `Llama(vocab_only=True)` still creates a context (and warns on stderr that its size
    exceeds the vocab-only model's training context of 0), so the model object underneath `Llama`
    (`_internals.LlamaModel`, stable at the pinned 0.3.36) is loaded alone.
    """
    from llama_cpp._internals import LlamaModel

    params = model_params(False)
    params.vocab_only = True
    try:
        with crash.step(f"reading the vocabulary of {model_path} with llama.cpp", extra_buffers=False):
            return LlamaModel(path_model=str(model_path), params=params, verbose=False)
    except (ValueError, RuntimeError) as e:
        raise BadInput(model_path, f"llama.cpp could not read its vocabulary: {e}") from None


# --- the probe: one child process per (build, CPU, model file, settings), before the first real call ---

@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    returncode: int
    detail: str  # the child's last stderr lines when it failed


def _probe_key(model_sha256: str, threads: int, n_ctx: int, use_extra_buffers: bool) -> str:
    import llama_cpp

    blob = json.dumps({"llama_cpp_python": llama_cpp.__version__, "system_info": system_info(),
                       "cpu_flags": sorted(cpu_flags()), "model": model_sha256, "threads": threads, "n_ctx": n_ctx,
                       "extra_buffers": use_extra_buffers}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _probe_dir() -> Path:
    from .cache import cache_dir

    d = cache_dir() / "probes"
    d.mkdir(parents=True, exist_ok=True)
    return d


PROBE_COMMAND = (sys.executable, "-m", "models.llama_loader")


def probe(model_path: str | Path, model_sha256: str, *, threads: int, n_ctx: int, use_extra_buffers: bool,
          command: tuple[str, ...] | list[str] = PROBE_COMMAND) -> ProbeResult:
    """Load the model and decode a prompt of ~90 tokens in a child process; a native crash there costs
    nothing. Passing results are cached per llama.cpp build, CPU, model file and settings."""
    key = _probe_key(model_sha256, threads, n_ctx, use_extra_buffers)
    mark = _probe_dir() / f"{key}.json"
    if mark.exists():
        return ProbeResult(True, 0, "cached")
    spec = {"model": str(model_path), "threads": threads, "n_ctx": n_ctx, "extra": use_extra_buffers}
    env = {k: v for k, v in os.environ.items() if k != crash.CONTEXT_ENV}
    run = subprocess.run([*command, json.dumps(spec)], capture_output=True,
                         text=True, env=env, timeout=600)
    if run.returncode != 0:
        return ProbeResult(False, run.returncode, "\n".join(run.stderr.strip().splitlines()[-5:]))
    from core.atomic import write_text

    write_text(mark, json.dumps({**spec, "model_sha256": model_sha256, "output": run.stdout.strip()}))
    return ProbeResult(True, 0, "")


def check_runs(model_path: str | Path, model_sha256: str, *, threads: int, n_ctx: int, decision: ExtraBuffers,
               command: tuple[str, ...] | list[str] = PROBE_COMMAND) -> ExtraBuffers:
    """Probe before the first real call. A native crash becomes BadInput (exit 2) naming the cause and the
    remedy; with `cpu_extra_buffers = "auto"`, a crash with extra buffers on that does not happen with them off
    turns them off (recorded with the reason)."""
    first = probe(model_path, model_sha256, threads=threads, n_ctx=n_ctx, use_extra_buffers=decision.use,
                  command=command)
    if first.ok:
        return decision
    if first.returncode > 0:  # a Python error in the child, not a native crash: say it as it is
        raise BadInput(model_path, f"llama.cpp could not load or run this model (probe exit {first.returncode}): "
                       f"{first.detail}")
    cause = signal_name(first.returncode)
    crashed, extra = first, decision.use  # the crash the message explains, and the buffers it happened with
    if decision.use:
        second = probe(model_path, model_sha256, threads=threads, n_ctx=n_ctx, use_extra_buffers=False,
                       command=command)
        if second.ok and decision.registered == "auto":
            return ExtraBuffers(decision.registered, False, f"off: a probe with extra buffers on crashed with {cause}, "
                                "one with them off ran", decision.build_amx, decision.cpu_amx)
        if second.ok:
            raise BadInput("prereg.toml", f"llama.cpp crashes with {cause} on this CPU when it loads {model_path} with "
                           "CPU extra buffers on, and runs with them off: register cpu_extra_buffers = false (or "
                           "\"auto\")", field="cpu_extra_buffers")
        if second.returncode < 0:  # it crashes with them off too: that crash is the one to explain
            crashed, extra = second, False
    buffers = "on and off" if decision.use and not extra else "on" if extra else "off"
    raise BadInput(model_path, f"llama.cpp crashes with {signal_name(crashed.returncode)} on this CPU when it loads "
                   f"and runs this model (threads {threads}, CPU extra buffers {buffers}), in a probe before any "
                   f"real call. {crash.diagnosis(-crashed.returncode, extra, decision.build_amx, decision.cpu_amx)}")


def _probe_main(spec: dict[str, Any]) -> None:
    llm = load_llama(spec["model"], threads=spec["threads"], n_ctx=spec["n_ctx"], use_extra_buffers=spec["extra"])
    out = llm.create_completion(PROBE_PROMPT, max_tokens=4, temperature=0.0)
    print(json.dumps({"weight_buffers": llm.weight_buffers, "prompt_tokens": out["usage"]["prompt_tokens"]}))
    llm.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2:])
    else:
        _probe_main(json.loads(sys.argv[1]))
