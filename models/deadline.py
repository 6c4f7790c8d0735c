"""A total deadline for each HTTP attempt, beside the SDKs' per-read timeout.

The SDKs' timeouts (httpx's) bound each wait for data: a server that sends a byte every few seconds would hold an
attempt open for as long as it keeps sending. Here every socket operation of an attempt made inside `deadline(s)`
waits at most until the deadline, and one begun after it fails at once with `DeadlinePassed`, a timeout to httpx and
so to the SDK (`APITimeoutError`): a failed attempt, retried by the retry rule (models.retry), then an `error` row.

No thread is started and none is left behind: the limit is applied where the SDK's connection pool reads, writes and
connects its sockets, by wrapping the network backend of every pool of the httpx client the SDK is given
(`bounded_client`). The deadline in force is held per thread (a context variable), so the attempts the call loop's
workers make at once each keep their own; outside `deadline(...)` the sockets behave exactly as before.
"""
from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar
from typing import Any, Callable, Iterator

try:  # the SDKs here depend on the httpx fork `httpx2`; elsewhere on httpx itself
    import httpcore2 as httpcore
except ImportError:  # pragma: no cover
    import httpcore

# (time.monotonic() at the deadline, the deadline's length in seconds), or None outside an attempt
_UNTIL: ContextVar[tuple[float, float] | None] = ContextVar("blindeval_deadline", default=None)


class DeadlinePassed(httpcore.TimeoutException):
    """The attempt ran past its total deadline (httpx maps it to its TimeoutException, the SDKs to APITimeoutError)."""

    def __init__(self, seconds: float):
        super().__init__(f"the call's total deadline of {seconds:g} s passed")
        self.seconds = seconds


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every socket operation of the HTTP calls made inside ends by `seconds` from now."""
    token = _UNTIL.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _UNTIL.reset(token)


def _limit(timeout: float | None) -> float | None:
    """The wait one socket operation may take: its own timeout, shortened to what is left of the deadline."""
    until = _UNTIL.get()
    if until is None:
        return timeout
    left = until[0] - time.monotonic()
    if left <= 0:
        raise DeadlinePassed(until[1])
    return left if timeout is None else min(timeout, left)


def _bounded(operation: Callable[[float | None], Any], timeout: float | None) -> Any:
    """Run one socket operation (given the wait it may take) within the deadline; a timeout once the deadline has
    passed is the deadline's."""
    try:
        return operation(_limit(timeout))
    except httpcore.TimeoutException:
        until = _UNTIL.get()
        if until is not None and time.monotonic() >= until[0]:
            raise DeadlinePassed(until[1]) from None
        raise


class _Stream:
    """A connection whose reads and writes end by the deadline in force."""

    def __init__(self, inner: Any):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return _bounded(lambda t: self._inner.read(max_bytes, timeout=t), timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        _bounded(lambda t: self._inner.write(buffer, timeout=t), timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        return _Stream(_bounded(lambda t: self._inner.start_tls(ssl_context, server_hostname=server_hostname,
                                                                timeout=t), timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend:
    """httpcore's network backend, with every connection it opens bounded by the deadline in force."""

    def __init__(self, inner: Any):
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> _Stream:
        return _Stream(_bounded(lambda t: self._inner.connect_tcp(host, port, timeout=t, local_address=local_address,
                                                                  socket_options=socket_options), timeout))

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> _Stream:
        return _Stream(_bounded(lambda t: self._inner.connect_unix_socket(path, timeout=t,
                                                                          socket_options=socket_options), timeout))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bounded_client(client: Any) -> Any:
    """The SDK's httpx client (`openai.DefaultHttpxClient()`, `anthropic.DefaultHttpxClient()`: the SDK's own
    defaults) with the network backend of each of its connection pools (the direct one, and a proxy's from the
    environment) wrapped so that `deadline` bounds it. httpx offers no public hook at that level: a version that
    moved these attributes fails here, when the backend is opened, never silently."""
    transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if pool is None or not hasattr(pool, "_network_backend"):
            raise RuntimeError(f"cannot bound the calls of {type(transport).__name__} with a total deadline: its "
                               "connection pool has no network backend where httpx keeps it")
        pool._network_backend = _Backend(pool._network_backend)
    return client
