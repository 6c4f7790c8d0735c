"""The one llama.cpp loader: the CPU extra-buffer decision (AMX), its read-back, the probe, the crash supervisor.

The AMX crash cannot be reproduced on a CPU without AMX, so the decision is tested on simulated CPU and
build information (the strings llama.cpp and /proc/cpuinfo really print), and the crash path with a
process that really dies by SIGILL.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import signal
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import crash
from core.crash import signal_name
from core.errors import BadInput
from judge.results.files import last_invocation
from models import llama_loader
from models.files import embedded_model, sha256_file
from models.llama_loader import (
    ExtraBuffers,
    build_features,
    check_runs,
    cpu_flags,
    decide_extra_buffers,
    extra_buffers,
    load_llama,
    weight_buffers,
)
from registration.seal import seal

from conftest import cli

# What llama_print_system_info() printed on an AMX Xeon (source build of llama-cpp-python 0.3.36) and on this
# project's AMD machine; and the flags line of /proc/cpuinfo on each.
AMX_BUILD = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | AVX512 = 1 | "
             "AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | "
             "REPACK = 1 | ")
PLAIN_BUILD = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | LLAMAFILE = 1 | "
               "OPENMP = 1 | REPACK = 1 | ")
AMX_CPU = ("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme sse sse2 avx avx2 avx512f avx512_bf16 "
           "avx512_fp16 amx_bf16 amx_tile amx_int8\n")
AMD_CPU = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu vme sse sse2 avx avx2 fma\n"


@pytest.mark.unit
def test_build_features_and_cpu_flags_parse_what_the_machine_prints():
    assert build_features(AMX_BUILD)["AMX_INT8"] == "1" and build_features(AMX_BUILD)["REPACK"] == "1"
    assert "AMX_INT8" not in build_features(PLAIN_BUILD) and build_features(PLAIN_BUILD)["AVX2"] == "1"
    assert {"amx_tile", "amx_int8", "avx2"} <= cpu_flags(AMX_CPU)
    assert "amx_tile" not in cpu_flags(AMD_CPU) and "avx2" in cpu_flags(AMD_CPU)
    assert cpu_flags("") == frozenset()


@pytest.mark.unit
@pytest.mark.parametrize("registered", ["auto", True, False])
def test_amx_build_on_amx_cpu_is_always_off(registered):
    d = decide_extra_buffers(registered, AMX_BUILD, cpu_flags(AMX_CPU))
    assert d.use is False and d.build_amx and d.cpu_amx and "AMX" in d.reason and d.registered == registered


@pytest.mark.unit
@pytest.mark.parametrize("build,cpu", [(AMX_BUILD, AMD_CPU), (PLAIN_BUILD, AMX_CPU), (PLAIN_BUILD, AMD_CPU)])
def test_otherwise_as_registered_and_auto_is_on(build, cpu):
    flags = cpu_flags(cpu)
    assert decide_extra_buffers("auto", build, flags).use is True
    assert decide_extra_buffers(True, build, flags).use is True
    assert decide_extra_buffers(False, build, flags).use is False


OTHER_FEATURES = ["SSE3", "AVX", "AVX2", "F16C", "FMA", "AVX512", "AVX512_VNNI", "AVX512_BF16", "REPACK",
                  "LLAMAFILE", "OPENMP"]
OTHER_FLAGS = ["fpu", "sse2", "avx", "avx2", "avx512f", "avx512_bf16", "avx512_fp16", "avx_vnni", "fma"]


@st.composite
def simulated_machine(draw):
    """A llama.cpp build (system info in any order, AMX_INT8 = 1, = 0 or absent, sometimes a GPU line before the
    CPU one) and a CPU (/proc/cpuinfo or an ARM-style "Features" line, any subset of the AMX flags)."""
    features = [(f, draw(st.sampled_from("01"))) for f in draw(st.lists(st.sampled_from(OTHER_FEATURES), unique=True))]
    amx_build = draw(st.sampled_from([None, "0", "1"]))
    if amx_build is not None:
        features.insert(draw(st.integers(0, len(features))), ("AMX_INT8", amx_build))
    info = "CPU : " + " | ".join(f"{k} = {v}" for k, v in features) + " | "
    if draw(st.booleans()):
        info = "CUDA : ARCHS = 890 | USE_GRAPHS = 1 | PEER_MAX_BATCH_SIZE = 128 | \n" + info
    amx_flags = draw(st.lists(st.sampled_from(["amx_tile", "amx_int8", "amx_bf16"]), unique=True))
    flags = draw(st.permutations(draw(st.lists(st.sampled_from(OTHER_FLAGS), unique=True)) + amx_flags))
    key = draw(st.sampled_from(["flags", "Features"]))
    cpuinfo = f"processor\t: 0\nvendor_id\t: GenuineIntel\n{key}\t\t: {' '.join(flags)}\n"
    return info, cpuinfo, amx_build == "1", bool(amx_flags)


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(machine=simulated_machine(), registered=st.sampled_from(["auto", True, False]))
def test_on_any_simulated_build_and_cpu_extra_buffers_are_off_exactly_where_both_have_amx(machine, registered):
    """The decision as a class: off whenever the build was compiled with AMX and the CPU reports any AMX flag
    (whatever is registered), else as registered with "auto" meaning on; the two facts are recorded as planted."""
    info, cpuinfo, build_amx, cpu_amx = machine
    d = decide_extra_buffers(registered, info, cpu_flags(cpuinfo))
    assert (d.build_amx, d.cpu_amx) == (build_amx, cpu_amx)
    assert d.use is ((not (build_amx and cpu_amx)) and registered in ("auto", True))
    assert ("SIGILL" in d.reason) is (build_amx and cpu_amx)


@pytest.mark.unit
@pytest.mark.parametrize("value", ["yes", 1, 0, None])
def test_anything_else_is_refused(value):
    with pytest.raises(BadInput) as e:
        decide_extra_buffers(value, PLAIN_BUILD, frozenset())
    assert e.value.field == "cpu_extra_buffers"


@pytest.mark.unit
def test_weight_buffers_read_from_llama_cpp_load_log():
    log = ["load_tensors: loading model tensors, this can take a while... (mmap = true)\n",
           "load_tensors:   CPU_Mapped model buffer size =   138.62 MiB\n",
           "load_tensors:          AMX model buffer size =    80.00 MiB\n",
           "load_tensors:   CPU_REPACK model buffer size =    12.50 MiB\n"]
    assert weight_buffers(log) == ["AMX", "CPU_Mapped", "CPU_REPACK"]


@pytest.fixture(scope="module")
def q8(tmp_path_factory) -> Path:
    from models.quantize import quantize

    return Path(quantize(embedded_model("smollm2"), "Q8_0", threads=1).info.path)


@pytest.mark.integration
def test_load_reads_back_where_the_weights_went(q8):
    """Off: llama.cpp was given use_extra_bufts = false and put every weight in plain CPU buffers."""
    llm = load_llama(q8, threads=1, n_ctx=256, use_extra_buffers=False)
    try:
        assert llm.model_params.use_extra_bufts is False
        assert llm.weight_buffers and set(llm.weight_buffers) <= {"CPU", "CPU_Mapped"}
        assert llm.create_completion("The capital of France is", max_tokens=3, temperature=0.0)["choices"][0]["text"]
    finally:
        llm.close()
    if extra_buffers().use and "AVX2 = 1" in llama_loader.system_info():  # on: Q4_0 is repacked on AVX2 builds
        from models.quantize import quantize

        q4_0 = quantize(embedded_model("smollm2"), "Q4_0", threads=1).info.path
        llm = load_llama(q4_0, threads=1, n_ctx=256, use_extra_buffers=True)
        try:
            assert llm.model_params.use_extra_bufts is True and "CPU_REPACK" in llm.weight_buffers
        finally:
            llm.close()


@pytest.mark.integration
def test_probe_runs_a_real_model_once_and_caches_it(q8):
    sha = sha256_file(q8)
    decision = extra_buffers()
    assert check_runs(q8, sha, threads=1, n_ctx=512, decision=decision) == decision
    marks = list((llama_loader._probe_dir()).glob("*.json"))
    assert any(json.loads(m.read_text())["model"] == str(q8) for m in marks)
    assert llama_loader.probe(q8, sha, threads=1, n_ctx=512, use_extra_buffers=decision.use).detail == "cached"


def _crashing_probe(tmp_path: Path, crash_when_extra: bool) -> list[str]:
    """A probe command that dies by SIGILL when extra buffers are on (or always)."""
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(f"""
        import json, os, signal, sys
        spec = json.loads(sys.argv[1])
        if spec["extra"] or not {crash_when_extra}:
            os.kill(os.getpid(), signal.SIGILL)
        print("{{}}")
    """))
    return [sys.executable, str(script)]


@pytest.mark.integration
def test_a_probe_crash_with_extra_buffers_turns_them_off_under_auto(tmp_path, q8):
    on = ExtraBuffers("auto", True, "on: auto", False, False)
    command = _crashing_probe(tmp_path, crash_when_extra=True)
    d = check_runs(q8, "f" * 64, threads=1, n_ctx=99, decision=on, command=command)
    assert d.use is False and "SIGILL" in d.reason
    with pytest.raises(BadInput) as e:  # registered on: say what to register instead of deciding for the user
        check_runs(q8, "e" * 64, threads=1, n_ctx=99, decision=ExtraBuffers(True, True, "on", False, False),
                   command=command)
    assert e.value.field == "cpu_extra_buffers" and "SIGILL" in str(e.value) and "false" in str(e.value)


@pytest.mark.integration
def test_a_probe_crash_either_way_names_cause_and_remedy(tmp_path, q8):
    off = ExtraBuffers(False, False, "off", False, False)
    with pytest.raises(BadInput) as e:
        check_runs(q8, "d" * 64, threads=1, n_ctx=99, decision=off, command=_crashing_probe(tmp_path, False))
    msg = str(e.value)
    assert (str(q8) in msg and "SIGILL (illegal instruction)" in msg and "Remedy" in msg
            and "before any real call" in msg)


GLUE = '''
import os, signal
from arms.glue import GlueResult

def answer(question, call_model, experiment_dir):
    reply = call_model([("user", question.question)])
    if question.id == os.environ["CRASH_AT"]:
        os.kill(os.getpid(), signal.SIGILL)   # what llama.cpp's AMX path does to the process
    return GlueResult(reply.text)
'''


@pytest.mark.slow
def test_a_native_crash_mid_run_exits_2_with_the_cause_and_loses_nothing(demo_copy, tmp_path):
    exp = tmp_path / "demo"
    shutil.copytree(demo_copy, exp)
    (tmp_path / "crashglue.py").write_text(GLUE)
    p = exp / "prereg.toml"
    p.write_text(p.read_text().replace('glue = "glue.py:answer"', 'glue = "crashglue:answer"'))
    seal(exp)
    first_ids = [json.loads(line)["id"] for line in (exp / "sets" / "exam.jsonl").read_text().splitlines()[:3]]
    out = tmp_path / "out"
    env = {"PYTHONPATH": str(tmp_path), "CRASH_AT": first_ids[2]}
    r = cli("judge", "run", "--exp", str(exp), "--arms", "glue-base", "--limit", "3", "--out", str(out), "--quiet",
            env=env)
    assert r.returncode == 2, (r.returncode, r.stderr[-3000:])
    assert "SIGILL (illegal instruction)" in r.stderr and "re-run to resume" in r.stderr
    assert "crashglue.py" in r.stderr  # the Python stack at the crash names the frame
    rows = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    done = [row["question_id"] for row in rows]  # the harness orders calls by prompt, not by id
    assert done and first_ids[2] not in done and set(done) <= set(first_ids) and len(set(done)) == len(done)
    assert all(row["status"] == "ok" for row in rows)
    env["CRASH_AT"] = "none"
    r = cli("judge", "run", "--exp", str(exp), "--arms", "glue-base", "--limit", "3", "--out", str(out), "--quiet",
            env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert sorted(row["question_id"] for row in rows if row["quant"] == "Q8_0") == sorted(first_ids)  # once each
    run = json.loads((out / "run.json").read_text())
    last = last_invocation(out)
    assert last["answers"]["cached_calls"] >= 1  # the call the crash interrupted was kept
    decision = last["machine"]["cpu_extra_buffers_decision"]
    assert decision == extra_buffers("auto").to_dict()
    eff = run["effective_settings"]["glue-base/Q8_0"]
    assert eff["cpu_extra_buffers"] is decision["use"] and eff["weight_buffers"]


@pytest.mark.integration
def test_killing_the_supervisor_kills_its_child(tmp_path):
    """`kill -9` of the command a user started must stop the work too, not leave an orphan writing files."""
    import os
    import signal
    import subprocess
    import time

    from conftest import ROOT

    proc = subprocess.Popen([sys.executable, "-m", "judge", "run", "--arms", "base", "--limit", "3", "--out",
                             str(tmp_path / "run"), "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    children_file = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.time() + 60
    child = None
    while child is None and time.time() < deadline and proc.poll() is None:
        pids = children_file.read_text().split() if children_file.exists() else []
        child = int(pids[0]) if pids else None
        time.sleep(0.05)
    assert child is not None, "the supervisor started no child"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 10
    while Path(f"/proc/{child}").exists() and time.time() < deadline:
        state = (Path(f"/proc/{child}/stat").read_text().split(")")[-1].split()[0]
                 if Path(f"/proc/{child}/stat").exists() else "X")
        if state == "Z":  # a zombie is dead; only its parent (gone) would reap it
            break
        time.sleep(0.05)
    alive = (Path(f"/proc/{child}/stat").exists()
             and Path(f"/proc/{child}/stat").read_text().split(")")[-1].split()[0] != "Z")
    assert not alive, "the child outlived its supervisor"


@pytest.mark.unit
def test_a_crash_inside_a_llama_cpp_step_names_the_step_cause_and_remedy(tmp_path):
    """What a user on an AMX CPU would see if llama.cpp died mid-generation despite the decision."""
    import subprocess

    (tmp_path / "dies.py").write_text(textwrap.dedent('''
        import os, signal, sys
        from core.crash import step, supervise

        def main():
            with step("generating with /models/x.gguf (llama.cpp, threads 1, CPU extra buffers on)",
                      extra_buffers=True, build_amx=True, cpu_amx=True):
                os.kill(os.getpid(), signal.SIGILL)
            return 0

        if __name__ == "__main__":
            sys.exit(supervise("dies", main))
    '''))
    from conftest import ROOT

    r = subprocess.run([sys.executable, "-m", "dies"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       env={**__import__("os").environ, "PYTHONPATH": f"{tmp_path}:{ROOT}"})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "SIGILL (illegal instruction) while generating with /models/x.gguf" in r.stderr
    assert "AMX" in r.stderr and "cpu_extra_buffers = false" in r.stderr and "re-run to resume" in r.stderr
    assert "dies.py" in r.stderr  # the Python stack of the crashing thread


@pytest.mark.unit
@pytest.mark.parametrize("value", ["yes", 1, 0])
def test_registration_refuses_what_the_decision_refuses(value, tmp_path):
    from registration.spec import parse_runtime

    with pytest.raises(BadInput) as e:
        parse_runtime({"runtime": {"cpu_extra_buffers": value}}, tmp_path / "prereg.toml")
    assert e.value.field == "cpu_extra_buffers"
    assert parse_runtime({"runtime": {"cpu_extra_buffers": False}}, tmp_path / "prereg.toml").cpu_extra_buffers is False


@pytest.mark.integration
@pytest.mark.parametrize("batch, flash_attn", [(1, False), (4, False), (16, True)])
def test_on_a_simulated_amx_machine_the_backend_loads_without_extra_buffers(batch, flash_attn, monkeypatch,
                                                                            tmp_path):
    """The whole backend path (decision, probe, load, the batched context, read-back, verification) on the AMX
    Xeon's build and CPU information. Q4_0 is the planted fact: this machine repacks it into CPU_REPACK buffers
    when extra buffers are on (checked first, unpatched), so only the decision can keep the weights in plain CPU
    buffers. A native step of this backend names the AMX cause for the crash supervisor. Four calls sharing a
    system prompt go through `models.call_loop.mapped` as collect sends them (four threads when batched, one at
    batch 1), so the batched context's counted steps and prefix copies (and, at 16, flash attention) run on that
    load."""


    from concurrent.futures import ThreadPoolExecutor

    from core import crash
    from models.backends.base import Generation, Request
    from models.backends.llama_cpp import INFO, LlamaConfig, LlamaCppBackend, differences
    from models.call_loop import mapped
    from models.quantize import quantize
    from models.spec import ModelSpec, Runtime

    q4_0 = quantize(embedded_model("smollm2"), "Q4_0", threads=1).info.path
    real = extra_buffers("auto")
    if not (real.use and "AVX2 = 1" in llama_loader.system_info()):
        pytest.skip("this build does not repack Q4_0 here, so on and off cannot be told apart")
    plain = load_llama(q4_0, threads=1, n_ctx=256, use_extra_buffers=True)
    try:
        assert "CPU_REPACK" in plain.weight_buffers  # what "on" does to this file on this machine
    finally:
        plain.close()

    monkeypatch.setattr(llama_loader, "system_info", lambda: AMX_BUILD)
    monkeypatch.setattr(llama_loader, "cpu_flags", lambda cpuinfo=None: cpu_flags(AMX_CPU))
    monkeypatch.setattr(llama_loader, "_decided", {})
    backend = LlamaCppBackend(LlamaConfig(model_path=q4_0, threads=1, n_ctx=512, parallel_sequences=batch,
                                          flash_attn=flash_attn))
    note = tmp_path / "step.json"
    monkeypatch.setenv(crash.CONTEXT_ENV, str(note))
    try:
        eff = backend.effective()
        decided = eff["cpu_extra_buffers_decision"]
        assert eff["cpu_extra_buffers"] is False and decided["use"] is False
        assert decided["build_amx"] and decided["cpu_amx"] and "AMX" in decided["reason"]
        assert set(eff["weight_buffers"]) <= {"CPU", "CPU_Mapped"}  # no CPU_REPACK, no AMX
        assert backend.identity()["cpu_extra_buffers"] is False  # answers made this way get their own call keys
        assert eff["batch"] == batch and eff["flash_attn"] is flash_attn
        g = Generation(max_tokens=8)
        system = "You answer in a few words. " * 4  # a prefix the batched slots share
        requests = [Request((("system", system), ("user", q)), g)
                    for q in ("Say hello.", "Name a colour.", "Name a fruit.", "Count to three.")]
        workers = INFO.workers(4, batch)  # as collect asks: 1 (one at a time) unless batched
        with ThreadPoolExecutor(workers) as pool:
            replies = list(mapped(pool, workers, backend.complete, requests, backend))
        assert all(r.completion_tokens > 0 for r in replies)
        model = ModelSpec(name="m", backend="llama-cpp", source=q4_0)
        runtime = Runtime(n_ctx=512, parallel_sequences=batch, flash_attn=flash_attn)
        assert differences(g, eff, "Q4_0", model, (), runtime) == []
        with backend._native_step("generating"):  # what a crash here would leave for the supervisor
            noted = json.loads(note.read_text())
        assert noted["build_amx"] is True and noted["cpu_amx"] is True and "CPU extra buffers off" in noted["step"]
        assert noted["extra_buffers"] is False  # so a crash here is never blamed on AMX (core.crash.diagnosis)
    finally:
        backend.close()


# --- which crash is AMX's: the message over every (signal, extra buffers, build AMX, CPU AMX) -----------------

# Hand-stated: AMX is the likely cause only of a SIGILL while extra buffers were on, in a build with AMX, on a CPU
# with AMX. Otherwise the message is generic; it offers `cpu_extra_buffers = false` only when they were on.
AMX_KIND = {(signal.SIGILL, True, True, True)}


def _expected_kind(sig: int, extra: bool, build: bool, cpu: bool) -> str:
    if (sig, extra, build, cpu) in AMX_KIND:
        return "amx"
    return "try buffers off" if extra else "buffers already off"


def _check_kind(message: str, kind: str, sig: int) -> None:
    assert ("AMX" in message) is (kind == "amx"), message
    assert ("cpu_extra_buffers = false" in message) is (kind != "buffers already off"), message
    assert ("already off" in message) is (kind == "buffers already off"), message
    assert "Cause:" in message and "Remedy:" in message
    if sig == signal.SIGILL and kind != "amx":  # an instruction the CPU lacks: the portable rebuild is offered
        assert "portable CPU target" in message


@pytest.mark.unit
@pytest.mark.parametrize("sig", crash.CRASH_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_crash_is_blamed_on_amx_only_when_it_can_be_amx(sig, tmp_path):
    """Every combination, through the supervisor's own reading of the step a crash left behind."""
    context = tmp_path / "context"
    for extra, build, cpu in itertools.product((True, False), repeat=3):
        context.write_text(json.dumps({"step": "generating with /models/x.gguf", "extra_buffers": extra,
                                       "build_amx": build, "cpu_amx": cpu}))
        code, message = crash._describe(-sig, context)
        assert code == 2 and "while generating with /models/x.gguf" in message
        _check_kind(message, _expected_kind(sig, extra, build, cpu), sig)
    # a step that did not say whether extra buffers were on: never AMX, never a setting that may be in effect
    context.write_text(json.dumps({"step": "generating", "build_amx": True, "cpu_amx": True}))
    _, message = crash._describe(-sig, context)
    assert "AMX" not in message and "cpu_extra_buffers" not in message


def _dying_probe(tmp_path: Path, sig_on: int | None, sig_off: int | None) -> list[str]:
    """A probe command that dies by `sig_on` with extra buffers on and by `sig_off` with them off (None: runs)."""
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(f"""
        import json, os, sys
        spec = json.loads(sys.argv[1])
        sig = {sig_on} if spec["extra"] else {sig_off}
        if sig is not None:
            os.kill(os.getpid(), sig)
        print("{{}}")
    """))
    return [sys.executable, str(script)]


@pytest.mark.unit
@pytest.mark.parametrize("registered, use, sig_on, sig_off, kind", [
    ("auto", False, None, signal.SIGSEGV, "buffers already off"),  # AMX machine, auto: a segfault is not AMX's
    ("auto", False, None, signal.SIGILL, "buffers already off"),  # nor a SIGILL with the buffers off
    (True, True, signal.SIGILL, signal.SIGILL, "buffers already off"),  # on, then off: crashes either way
    (True, True, signal.SIGSEGV, signal.SIGSEGV, "buffers already off"),
], ids=["segv-off", "ill-off", "ill-on-and-off", "segv-on-and-off"])
def test_a_probe_crash_on_an_amx_machine_is_not_blamed_on_amx_unless_it_can_be(registered, use, sig_on, sig_off,
                                                                               kind, tmp_path):
    """The probe before the first call, on the AMX Xeon's build and CPU: a crash with the extra buffers off
    (the decision there) is explained honestly, and the remedy is never the setting already in effect."""
    decision = ExtraBuffers(registered, use, "as decided", True, True)
    with pytest.raises(BadInput) as e:
        check_runs(tmp_path / "m.gguf", hashlib.sha256(tmp_path.name.encode()).hexdigest(), threads=1, n_ctx=99,
                   decision=decision, command=_dying_probe(tmp_path, sig_on, sig_off))
    message = str(e.value)
    sig = sig_off
    assert signal_name(-sig) in message and "before any real call" in message
    assert ("CPU extra buffers on and off" in message) is use
    _check_kind(message, kind, sig)
