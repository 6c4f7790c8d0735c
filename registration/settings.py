"""How a registered value is read: of the kind the code reads, within its bound, a name fit for a path, a URL a
client takes; and a table's keys, each one it defines. Every parser of prereg.toml and of a rubric reads through these,
so a misspelt or out-of-range setting is refused when the file is loaded, naming file, line and key."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from core.errors import BadInput

from .seal import inside


def check_keys(table: Any, known: tuple[str, ...], file: Path | str, where: str) -> None:
    """A misspelt setting must not be silently ignored: refuse any key the table does not define."""
    if not isinstance(table, dict):
        raise BadInput(file, f"{where} must be a table", field=where)
    for key in table:
        if key not in known:
            raise BadInput(file, f"unknown setting in {where}; known: {', '.join(known)}", field=key)


REQUIRED = object()
KINDS = {  # what a registered value must be, and how a message says so
    "string": (lambda v: isinstance(v, str), "a string"),
    "integer": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "number": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v), "a number"),
    "boolean": (lambda v: isinstance(v, bool), "true or false"),
    "strings": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings"),
}


def setting(table: dict, key: str, kind: str, file: Path | str, where: str, default: Any = REQUIRED) -> Any:
    """A registered value of the kind the code reads, else BadInput naming the key: `alpha = "x"` is refused
    at load, not discovered by the analysis after every answer and verdict was paid for."""
    if key not in table:
        if default is REQUIRED:
            raise BadInput(file, f"missing in {where}", field=key)
        return default
    value = table[key]
    ok, name = KINDS[kind]
    if not ok(value):
        raise BadInput(file, f"in {where} must be {name}, got {value!r}", field=key)
    return value


@dataclass(frozen=True)
class Bound:
    """The registered values a setting may take, and why the upper end is where it is: low to high inclusive, or
    above low (`above`: a duration of 0 s is no duration)."""

    low: float
    high: float
    why: str
    above: bool = False


# Every registered count and quantity has an upper bound, checked when prereg.toml is loaded, before the first
# model call: generous (far above any sane design), but each keeps a run and its analysis within time and memory
# on a laptop, so no registration can fail or hang after its calls were paid for. docs/reference/registration.md
# lists them.
SEED_MAX = 2**32 - 2
BOUNDS = {
    "seed": Bound(0, SEED_MAX, "llama.cpp and llama-server read a seed as a 32-bit unsigned integer and take "
                               "2^32 - 1 for 'random'; numpy's generator takes no negative seed"),
    "threads": Bound(1, 512, "llama.cpp runs at most 512 threads (GGML_MAX_N_THREADS)"),
    "n_ctx": Bound(16, 2**20, "llama.cpp allocates the KV cache of the whole context up front; 2^20 tokens is the "
                              "longest context current open models take"),
    "parallel_sequences": Bound(1, 256, "llama.cpp decodes at most 256 sequences in one context (LLAMA_MAX_SEQ)"),
    "gpu_layers": Bound(0, 10_000, "no model has that many layers (999 is the customary 'all')"),
    "max_tokens": Bound(1, 2**20, "no reply is longer than the largest n_ctx"),
    "samples": Bound(1, 1000, "each sample of each question is a paid call and a row"),
    "scale": Bound(-100, 100, "llama.cpp multiplies the adapter's weights by it as a 32-bit float; beyond ±100 the "
                              "adapter swamps the model"),
    "concurrency": Bound(1, 256, "each request in flight holds a thread and a connection"),
    "attempts": Bound(1, 20, "retries back off up to 30 s each: 20 attempts give up on a call within ~8 minutes"),
    "timeout_s": Bound(0, 86_400, "a wait for data of more than a day is a hang", above=True),
    "deadline_s": Bound(0, 86_400, "an attempt of more than a day is a hang", above=True),
    "batch_poll_s": Bound(0, 86_400, "providers end a batch within 24 hours", above=True),
    "code_timeout_s": Bound(0, 86_400, "a call of the experiment's own code of more than a day is a hang", above=True),
    "batch_max_requests": Bound(1, 1_000_000, "ten times the largest provider limit (Anthropic: 100,000)"),
    "batch_max_bytes": Bound(1, 2**31, "a batch's requests are built in memory (providers take at most 256 MB)"),
    "price": Bound(0, 1_000_000, "USD per million tokens; today's dearest models cost hundreds"),
    "max_cost": Bound(0, 1_000_000, "USD a results folder may cost; a ceiling above a million dollars bounds nothing"),
    "judge_attempts": Bound(1, 10, "each verdict attempt is a paid call; one repair rule makes more than a few "
                                   "attempts pointless"),
    "resamples": Bound(100, 100_000, "the bootstrap holds resamples x distinct differences (or clusters) counts in "
                                     "memory; 10,000 already rests a 2.5% tail on 250 resamples"),
    "calibration_sims": Bound(1, 10_000, "each simulated data set is bootstrapped again (resamples x sims draws per "
                                         "decision, and verify repeats it)"),
    "calibration_work": Bound(1, 2 * 10**7, "calibration_sims x resamples, ten times the default 200 x 10,000: "
                                            "about a minute per decision on a shared 2-core machine"),
    "min_clusters": Bound(1, 1_000_000, "more clusters than any question set holds"),
    "margin": Bound(0, 1_000_000, "a distance on the score scale; preflight also holds it within the rubric's "
                                  "scale"),
    "k": Bound(1, 10_000, "each of the top k answers is a paid read"),
    "ngram_n": Bound(1, 1_000, "tokens per contamination n-gram; above it every question is shorter, so checked whole"),
    "retest": Bound(0, 100_000, "each retest is a paid verdict; a test-retest sample larger than this measures "
                                "nothing more"),
}


def bounded(table: dict, key: str, kind: str, file: Path | str, where: str, default: Any = REQUIRED,
            bound: str | None = None) -> Any:
    """`setting` within BOUNDS[bound or key], else BadInput naming the key, the bound and why."""
    value = setting(table, key, kind, file, where, default)
    if key not in table:
        return value
    b = BOUNDS[bound or key]
    if not (b.low < value if b.above else b.low <= value) or value > b.high:
        low = f"> {b.low:g}" if b.above else f">= {b.low:g}"
        raise BadInput(file, f"in {where} must be {low} and <= {b.high:,}, got {value!r} ({b.why})", field=key)
    return value


def plain_name(value: str, file: Path | str, where: str, key: str) -> str:
    """A name that becomes part of a path (results/<experiment>-<arms>, rubrics/<rubric>.toml): one printable path
    component, so no registered name can write or read outside its folder."""
    if not value.strip() or value in (".", "..") or "/" in value or "\\" in value or not value.isprintable():
        raise BadInput(file, f"in {where} must be a name of printable characters without / or \\ (it becomes part "
                       f"of a file path), got {value!r}", field=key)
    return value


def http_url(url: str, file: Path | str, where: str, key: str = "base_url") -> str:
    """An http(s) URL with a host, as the SDKs take it; else BadInput now rather than every call failing later."""
    example = 'e.g. "http://127.0.0.1:8080/v1"'
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port out of range or not a number raises here
        host = parts.hostname or ""
        host.encode("idna")
    except (ValueError, UnicodeError) as e:
        raise BadInput(file, f"in {where} is not a URL ({e}): {url!r}; {example}", field=key) from None
    if parts.scheme not in ("http", "https") or not host or not url.isprintable() or " " in url:
        raise BadInput(file, f"in {where} must be an http:// or https:// URL with a host, got {url!r}; {example}",
                       field=key)
    return url


def sealed_files(table: dict, key: str, file: Path, where: str, exp_dir: Path, default: Any = REQUIRED) -> list[str]:
    """A registered list of files inside the experiment folder (the seal covers them): none empty, none twice."""
    files = setting(table, key, "strings", file, where, default)
    for rel in files:
        if not rel.strip():
            raise BadInput(file, f"{where} {key} names an empty path", field=key)
        inside(exp_dir, rel, file, key)
    if len(set(files)) != len(files):
        raise BadInput(file, f"{where} {key} lists a file twice: {files}", field=key)
    return files
