"""Several llama.cpp sequences decoded together: continuous batching in process, as llama-server does it.

With `[runtime] batch = N` (N > 1) up to N requests share one llama.cpp context created on the
already-loaded model with `n_seq_max = N`: every decode step puts the next token of each running
sequence (or a chunk of a new sequence's prompt) into one `llama_batch`, so the weights are read once
per step for N sequences instead of once per sequence. When a sequence finishes, its KV cells are
kept and a waiting request takes the free slot whose cells hold the longest prefix of its prompt at the
next step: the common prefix stays (`llama_memory_seq_rm` frees the rest), as the sequential path reuses
the previous prompt's prefix. A prefix another slot holds is copied from it (`llama_memory_seq_cp`), and
requests arriving together wait one step for the first of them to decode their shared prefix, so a judge's
rubric or an arm's system prompt is decoded once, not once per slot.

Why in process and not a managed llama-server: llama-server ships only with a test extra that
compiles llama.cpp (README's first command would gain a compile), and `python -m llama_cpp.server`
answers one request at a time. The batch API of the llama.cpp already loaded needs neither.

What stays as in the sequential path (models.backends.llama_cpp, which goes through
`Llama.create_chat_completion`): the prompt is the same rendered chat template tokenized with
`add_bos=False, special=True`; each sequence has its own sampler chain built by llama-cpp-python's
own `Llama._init_sampler` with the request's own seed and the same extra settings (so the same
grammar/penalties/greedy or top-k/typical/top-p/min-p/temp/dist order); a JSON schema becomes the
same grammar; the completion ends as `Llama._create_completion` ends it (an end-of-generation token,
a stop string, or max_tokens, with the same multi-byte rule and the same cap at n_ctx).

The KV cache is not unified (`kv_unified = false`) and the context holds N * n_ctx cells: llama.cpp
then gives each sequence its own stream of n_ctx cells (`llama_n_ctx_seq`), so every sequence has the
registered context, and attention reads only its own sequence's cells. What can differ from the
sequential path: the numbers. A token's logits are computed inside a larger matrix product whose shape
depends on what else is in the batch, so greedy outputs can differ in rare near-ties (measured in
BENCHMARKS.md); hence the batch size is part of the call key when above 1.
"""
from __future__ import annotations

import ctypes
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

WAKE = object()  # put in the queue when a caller leaves: the decoder looks again at whom it waits for
STALL_S = 30.0  # a caller silent this long (a slow glue step, a bug in the count) no longer holds up a step
N_BATCH = 512  # tokens per llama_decode call, llama-cpp-python's default n_batch
MIN_SHARED = 8  # prompt tokens worth a copy of another slot's cells, or a step's wait for them


@dataclass
class Job:
    """One request's decoding state; the caller's thread waits on `done`."""

    prompt: list[int]
    sampler: Any  # a llama_cpp._internals.LlamaSampler (owns the chain)
    max_tokens: int
    stop: list[bytes]
    order: str = ""  # the whole request, so equal prompts (samples with other seeds) are admitted in a fixed order
    pending: list[int] = field(default_factory=list)  # tokens still to feed: the prompt, then the last sampled
    pos: int = 0
    fed: list[int] = field(default_factory=list)  # every token in this sequence's KV cells, in order
    completion: list[int] = field(default_factory=list)
    multibyte_fix: int = 0
    text: bytes = b""
    finish_reason: str = "length"
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class Callers:
    """How many threads are calling the decoder, each keeping one request in flight until it leaves.

    Which requests share a decode step changes their numbers (see above), so it must not depend on thread
    timing: when the caller knows its threads (models.call_loop.mapped), the decoder starts a step only once every
    thread still calling has its request queued or running, and admits them in a fixed order. Callers that
    do not say (None) are decoded as they come."""

    def __init__(self) -> None:
        self.n: int | None = None
        self._lock = threading.Lock()
        self.wake: Callable[[], None] = lambda: None

    def join(self, n: int) -> None:
        with self._lock:
            self.n = (self.n or 0) + n
        self.wake()

    def leave(self) -> None:
        with self._lock:
            self.n = None if not self.n or self.n <= 1 else self.n - 1
        self.wake()


class ParallelDecoder:
    """One llama.cpp context with `n_seq` sequence slots and the thread that decodes them together.

    `submit` is called from any number of threads and blocks until its job is finished."""

    def __init__(self, llm, n_seq: int, n_ctx: int, threads: int, adapters: list, scales: list[float],
                 step: Callable[[], Any], callers: Callers | None = None):
        import llama_cpp

        self.llm, self.n_seq, self.n_ctx, self._step = llm, n_seq, n_ctx, step
        self.callers = callers or Callers()
        # the sequential context's parameters (flash attention off, RoPE scaling...), with room for n_seq sequences
        params = llama_cpp.llama_context_params.from_buffer_copy(llm.context_params)
        params.n_ctx = n_seq * n_ctx
        params.n_batch = params.n_ubatch = N_BATCH
        params.n_seq_max = n_seq
        params.kv_unified = False
        params.n_threads = params.n_threads_batch = threads
        self.ctx = llama_cpp.llama_init_from_model(llm.model, params)
        if not self.ctx:
            raise RuntimeError(f"llama.cpp could not create a context for {n_seq} sequences of {n_ctx} tokens")
        if adapters:
            n = len(adapters)
            handles = (llama_cpp.llama_adapter_lora_p_ctypes * n)(*adapters)
            if llama_cpp.llama_set_adapters_lora(self.ctx, handles, n, (ctypes.c_float * n)(*scales)) != 0:
                llama_cpp.llama_free(self.ctx)
                raise RuntimeError("llama.cpp refused to set the LoRA adapters on the batched context")
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.batch = llama_cpp.llama_batch_init(N_BATCH, 0, 1)
        self.vocab = llm._model.vocab
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._kept: list[list[int]] = [[] for _ in range(n_seq)]  # tokens a free slot's KV cells still hold
        self._open = threading.Lock()  # held while a job is queued or the decoder closes: none is queued after
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="llama-batch", daemon=True)
        self._thread.start()
        self.callers.wake = lambda: self._queue.put(WAKE)

    def read_back(self) -> dict[str, Any]:
        """What llama.cpp made of the context: sequences, context per sequence, threads."""
        import llama_cpp

        return {"batch": int(llama_cpp.llama_n_seq_max(self.ctx)), "n_ctx": int(llama_cpp.llama_n_ctx_seq(self.ctx)),
                "n_threads": int(llama_cpp.llama_n_threads(self.ctx)),
                "n_threads_batch": int(llama_cpp.llama_n_threads_batch(self.ctx))}

    def submit(self, job: Job) -> Job:
        if len(job.prompt) >= self.n_ctx:  # as Llama._create_completion refuses it
            raise ValueError(f"Requested tokens ({len(job.prompt)}) exceed context window of {self.n_ctx}")
        job.max_tokens = min(job.max_tokens, self.n_ctx - len(job.prompt))
        with self._open:
            if self._closed:
                raise RuntimeError("the batched llama.cpp decoder was closed")
            self._queue.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job

    def _loop(self) -> None:
        slots: list[Job | None] = [None] * self.n_seq
        waiting: list[Job] = []  # taken from the queue but deferred (`_admit`): first in line for a free slot
        while True:
            if not self._gather(slots, waiting):
                self._fail(slots, RuntimeError("the batched llama.cpp decoder was closed"))
                for job in waiting:
                    job.error = RuntimeError("the batched llama.cpp decoder was closed")
                    job.done.set()
                return
            waiting.sort(key=lambda j: (j.prompt, j.order))  # arrival order is thread timing: not used
            copied: set[int] = set()
            deferred = []
            for job in waiting:
                try:
                    if None not in slots or not self._admit(slots, job, copied):
                        deferred.append(job)
                except BaseException as e:  # this request fails; the others and the decoder go on
                    job.error = e
                    job.done.set()
            waiting = deferred
            if not any(slots):  # every request admitted at this step failed
                continue
            try:
                with self._step():
                    self._decode_step(slots)
            except BaseException as e:  # a failed decode fails every running sequence, never silently
                self._fail(slots, e)

    def _gather(self, slots: list[Job | None], waiting: list[Job]) -> bool:
        """Take queued requests into `waiting` until every known caller has one in flight (or, callers unknown,
        until the queue is empty with something to decode). False when the decoder is closed."""
        silent_since = None
        while True:
            in_flight = sum(s is not None for s in slots) + len(waiting)
            expected = self.callers.n
            # enough to step once something is in flight and every known caller has a request in: take only what
            # is already queued
            block = not in_flight or (expected is not None and in_flight < min(expected, self.n_seq))
            try:
                if not block:
                    item = self._queue.get_nowait()
                elif in_flight == 0:
                    item = self._queue.get()  # idle
                else:
                    item = self._queue.get(timeout=1.0)
            except queue.Empty:
                if not block:
                    return True
                silent_since = silent_since or time.monotonic()
                if time.monotonic() - silent_since >= STALL_S:
                    return True
                continue
            if item is None:
                return False
            if item is not WAKE:
                waiting.append(item)
                silent_since = None

    def _admit(self, slots: list[Job | None], job: Job, copied: set[int]) -> bool:
        """Into the free slot whose KV cells hold the longest prefix of its prompt, which is kept (as the
        sequential path keeps the previous prompt's common prefix); at least one prompt token is decoded, for
        its logits.

        When another slot's cells hold a longer prefix (a shared system prompt or rubric), they are copied
        (`llama_memory_seq_cp`, which llama.cpp performs at the next decode) instead of decoded again; when a
        running sequence has not yet decoded a longer shared prefix, the job waits one step for it (False), so
        N requests arriving together decode their shared prefix once, not N times."""
        import llama_cpp

        def common(held: list[int]) -> int:
            n = 0
            for a, b in zip(held, job.prompt, strict=False):
                if a != b:
                    break
                n += 1
            return min(n, len(job.prompt) - 1)

        i = self._choose_slot([i for i, s in enumerate(slots) if s is None], lambda i: common(self._kept[i]))
        keep = common(self._kept[i])
        # cells another slot holds now (a slot filled by a copy at this step holds nothing yet)
        held = {j: s.fed if s is not None else self._kept[j]
                for j, s in enumerate(slots) if j != i and j not in copied}
        source = max(held, key=lambda j: common(held[j]), default=None)
        shared = common(held[source]) if source is not None else 0
        coming = max((common(s.fed + s.pending) for s in slots if s is not None and s.pending[1:]), default=0)
        if coming > max(keep, shared) + MIN_SHARED:
            return False
        if shared > keep + MIN_SHARED:
            # llama.cpp copies whole sequences between streams: copy all, then drop what is not shared
            llama_cpp.llama_memory_seq_rm(self.memory, i, -1, -1)
            llama_cpp.llama_memory_seq_cp(self.memory, source, i, -1, -1)
            copied.add(i)
            keep = shared
        llama_cpp.llama_memory_seq_rm(self.memory, i, keep, -1)
        job.pos, job.fed, job.pending = keep, job.prompt[:keep], job.prompt[keep:]
        slots[i] = job
        return True

    @staticmethod
    def _choose_slot(free: list[int], kept_prefix: Callable[[int], int]) -> int:
        """The free slot whose cells hold the longest prefix of the prompt."""
        return max(free, key=kept_prefix)

    def _fail(self, slots: list[Job | None], error: BaseException) -> None:
        for i, job in enumerate(slots):
            if job is not None:
                job.error = error
                self._finish(slots, i)

    def _finish(self, slots: list[Job | None], i: int) -> None:
        import llama_cpp

        job = slots[i]
        if job.error is None:
            self._kept[i] = job.fed
        else:  # what a failed decode left in the cells is not known: free them all
            llama_cpp.llama_memory_seq_rm(self.memory, i, -1, -1)
            self._kept[i] = []
        slots[i] = None
        job.done.set()

    def _decode_step(self, slots: list[Job | None]) -> None:
        """One llama_decode over every running sequence: generating ones first (one token each), then prompt chunks."""
        import llama_cpp

        b = self.batch
        n = 0
        sample_at: list[tuple[int, int]] = []  # (slot, index in the batch) of each token whose logits are sampled
        for i in sorted(range(self.n_seq), key=lambda i: slots[i] is None or len(slots[i].pending) > 1):
            job = slots[i]
            if job is None or n == N_BATCH:
                continue
            feed = job.pending[:N_BATCH - n]
            for k, token in enumerate(feed):
                b.token[n] = token
                b.pos[n] = job.pos + k
                b.n_seq_id[n] = 1
                b.seq_id[n][0] = i
                b.logits[n] = 0
                n += 1
            job.pos += len(feed)
            job.fed.extend(feed)
            del job.pending[:len(feed)]
            if not job.pending:
                b.logits[n - 1] = 1
                sample_at.append((i, n - 1))
        b.n_tokens = n
        rc = llama_cpp.llama_decode(self.ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode failed with {rc} for a batch of {n} tokens")
        for i, idx in sample_at:
            job = slots[i]
            token = llama_cpp.llama_sampler_sample(job.sampler.sampler, self.ctx, idx)
            if self._advance(job, token):
                self._finish(slots, i)
            else:
                job.pending = [token]

    def _advance(self, job: Job, token: int) -> bool:
        """Take a sampled token as `Llama._create_completion` does; True when the completion is finished."""
        import llama_cpp

        if llama_cpp.llama_vocab_is_eog(self.vocab, token):
            job.text = self.llm.detokenize(job.completion)
            job.finish_reason = "stop"
            return True
        job.completion.append(token)
        all_text = self.llm.detokenize(job.completion)
        for k, char in enumerate(all_text[-3:]):  # an incomplete UTF-8 character is not checked yet
            k = 3 - k
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    job.multibyte_fix = num - k
        if job.multibyte_fix > 0:
            job.multibyte_fix -= 1
            return False
        stops = [s for s in job.stop if s in all_text]
        if stops:
            job.text = all_text[: all_text.index(stops[0])]
            job.finish_reason = "stop"
            return True
        if len(job.completion) >= job.max_tokens:
            job.text = all_text
            job.finish_reason = "length"
            return True
        return False

    def close(self) -> None:
        import llama_cpp

        if self.ctx is None:
            return
        with self._open:
            self._closed = True
            self._queue.put(None)
        self._thread.join()  # it fails the sequences still running (an interrupted run) and returns
        while not self._queue.empty():  # jobs queued behind the running ones: failed too, no caller waits forever
            job = self._queue.get_nowait()
            if job is not None:
                job.error = RuntimeError("the batched llama.cpp decoder was closed")
                job.done.set()
        llama_cpp.llama_batch_free(self.batch)
        llama_cpp.llama_free(self.ctx)
        self.ctx = None

