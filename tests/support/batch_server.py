"""A local peer for the batch APIs of the official `openai` and `anthropic` SDKs, answering through llama-server.

It speaks the routes as the installed SDK types define them:
- OpenAI Batch: `POST /v1/files` (multipart, purpose "batch") -> `FileObject`; `POST /v1/batches` (with its
  `metadata`) -> `Batch`; `GET /v1/batches/{id}` -> `Batch` (status validating/in_progress/completed/expired,
  `output_file_id`, `error_file_id`, `request_counts`, `metadata`); `GET /v1/batches?after&limit` -> a cursor
  page of `Batch`, newest first; `GET /v1/files/{id}/content` -> the JSONL output or error file, one line
  `{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}` per request, in UTF-8 as
  written (a U+2028 in a reply stays a raw U+2028);
- Anthropic Message Batches: `POST /v1/messages/batches` -> `MessageBatch`; `GET /v1/messages/batches/{id}` ->
  `MessageBatch` (processing_status in_progress/ended, `request_counts`, `results_url` once ended);
  `GET /v1/messages/batches?after_id&before_id&limit` -> a page of `MessageBatch`, newest first;
  `GET {results_url}` -> JSONL of `MessageBatchIndividualResponse` (result succeeded/errored/canceled/expired).
Each batched request that runs is forwarded to llama-server's own route (`/v1/chat/completions` or
`/v1/messages`): real completions, counted here (`forwarded`: the calls a provider would bill). Without a
llama-server, `answer(api, body)` gives each completion instead (planted replies).

Faults are the test's to script: `hold` keeps new batches in progress until `release()`; `fail(custom_id,
body)` true makes that request error without running; `stop_after` = n lets the next batch run n requests, the
rest ending unrun as `stop_as` says ("expired", or "cancelled" as if the user cancelled it);
`refuse_submissions` = n answers the next n submissions with HTTP 500; `on_submit(batch)` runs once a submission
is accepted, before its answer is sent (a test kills the client there). Synchronous completion routes answer 403
and are counted (`sync_calls`): a batch model must never be asked directly.
"""
from __future__ import annotations

import email.parser
import json
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

UNRUN_OPENAI = {"expired": {"code": "batch_expired",
                            "message": "This request could not be executed before the completion window expired."},
                "cancelled": {"code": "batch_cancelled", "message": "This request was cancelled with its batch."}}


@dataclass
class Batch:
    id: str
    api: str  # "openai" | "anthropic"
    requests: list[dict]  # OpenAI input lines / Anthropic {"custom_id", "params"}
    created: int
    input_file_id: str | None = None
    metadata: dict[str, str] | None = None
    released: threading.Event = field(default_factory=threading.Event)
    ended: bool = False
    stopped: str | None = None  # "expired" | "cancelled": requests past the stop never ran
    results: dict[str, Any] = field(default_factory=dict)  # custom_id -> ("ok", body) | ("error", message)


class BatchServer:
    """Start with `with BatchServer(llama_url) as s:`; `s.url` is the root (OpenAI SDK: `s.url + "/v1"`)."""

    def __init__(self, llama_url: str | None, models: tuple[str, ...] = ("smollm2-q8",),
                 answer: Callable[[str, dict], dict] | None = None):
        self.llama_url = (llama_url or "").rstrip("/")
        self.answer = answer or (lambda api, body: _post(
            self.llama_url + ("/v1/chat/completions" if api == "openai" else "/v1/messages"), body))
        self.on_submit: Callable[[Batch], None] = lambda batch: None
        self.models = models
        self.hold = False
        self.fail: Callable[[str, dict], bool] = lambda custom_id, body: False
        self.stop_after: int | None = None
        self.stop_as = "expired"
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, Batch] = {}
        self.forwarded: list[dict] = []  # {"api", "custom_id", "batch", "input_tokens", "output_tokens"}
        self.refuse_submissions = 0  # answer this many batch submissions with HTTP 500, starting nothing
        self.failed: list[str] = []  # custom_ids the script failed
        self.sync_calls = 0
        self._lock = threading.Lock()
        self._n = 0
        handler = type("Handler", (_Handler,), {"peer": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "BatchServer":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _id(self, prefix: str) -> str:
        with self._lock:
            self._n += 1
            return f"{prefix}_{self._n:04d}"

    def release(self) -> None:
        """Let every held batch run."""
        self.hold = False
        for b in list(self.batches.values()):
            b.released.set()

    def submitted(self, api: str) -> list[Batch]:
        return [b for b in self.batches.values() if b.api == api]

    def start(self, batch: Batch) -> None:
        self.batches[batch.id] = batch
        stop_after, self.stop_after = self.stop_after, None
        if not self.hold:
            batch.released.set()
        threading.Thread(target=self._run, args=(batch, stop_after), daemon=True).start()

    def _run(self, batch: Batch, stop_after: int | None) -> None:
        batch.released.wait()
        for i, req in enumerate(batch.requests):
            custom_id = req["custom_id"]
            body = req["body"] if batch.api == "openai" else req["params"]
            if stop_after is not None and i >= stop_after:
                batch.stopped = self.stop_as
                continue  # never run: no result but the stop
            if self.fail(custom_id, body):
                batch.results[custom_id] = ("error", "scripted failure of this request")
                self.failed.append(custom_id)
                continue
            out = self.answer(batch.api, body)
            usage = out.get("usage") or {}
            self.forwarded.append({"api": batch.api, "custom_id": custom_id, "batch": batch.id,
                                   "input_tokens": usage.get("prompt_tokens", usage.get("input_tokens", 0)),
                                   "output_tokens": usage.get("completion_tokens", usage.get("output_tokens", 0))})
            batch.results[custom_id] = ("ok", out)
        batch.ended = True

    # OpenAI shapes

    def openai_batch(self, b: Batch) -> dict:
        status = (b.stopped or "completed") if b.ended else "in_progress"
        done = sum(r[0] == "ok" for r in b.results.values())
        out = {"id": b.id, "object": "batch", "endpoint": "/v1/chat/completions", "input_file_id": b.input_file_id,
               "completion_window": "24h", "status": status, "created_at": b.created,
               "request_counts": {"total": len(b.requests), "completed": done, "failed": len(b.results) - done},
               "metadata": b.metadata}
        if b.ended:
            ended_at = {None: "completed_at", "expired": "expired_at", "cancelled": "cancelled_at"}[b.stopped]
            out[ended_at] = int(time.time())
            out["output_file_id"], out["error_file_id"] = self._openai_files(b)
        return out

    def _openai_files(self, b: Batch) -> tuple[str | None, str | None]:
        ok, errors = [], []
        for req in b.requests:
            cid = req["custom_id"]
            line = {"id": f"batch_req_{cid[:12]}", "custom_id": cid, "response": None, "error": None}
            result = b.results.get(cid)
            if result is None:
                errors.append({**line, "error": UNRUN_OPENAI[b.stopped]})
            elif result[0] == "ok":
                ok.append({**line, "response": {"status_code": 200, "request_id": f"req_{cid[:8]}",
                                                "body": result[1]}})
            else:
                errors.append({**line, "response": {"status_code": 500, "request_id": f"req_{cid[:8]}", "body": {
                    "error": {"message": result[1], "type": "server_error"}}}})
        ids = []
        for lines, name in ((ok, "output"), (errors, "error")):
            if not lines:
                ids.append(None)
                continue
            fid = f"file-{b.id}-{name}"
            self.files[fid] = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()
            ids.append(fid)
        return ids[0], ids[1]

    # Anthropic shapes

    def anthropic_batch(self, b: Batch) -> dict:
        counts = {"processing": 0 if b.ended else len(b.requests), "succeeded": 0, "errored": 0, "canceled": 0,
                  "expired": 0}
        if b.ended:
            for req in b.requests:
                result = b.results.get(req["custom_id"])
                unrun = "canceled" if b.stopped == "cancelled" else "expired"
                counts[unrun if result is None else "succeeded" if result[0] == "ok" else "errored"] += 1
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(b.created))
        return {"id": b.id, "type": "message_batch", "processing_status": "ended" if b.ended else "in_progress",
                "request_counts": counts, "created_at": created,
                "expires_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(b.created + 86400)),
                "ended_at": created if b.ended else None, "archived_at": None,
                "cancel_initiated_at": created if b.stopped == "cancelled" else None,
                "results_url": f"{self.url}/v1/messages/batches/{b.id}/results" if b.ended else None}

    def anthropic_results(self, b: Batch) -> bytes:
        lines = []
        for req in b.requests:
            cid = req["custom_id"]
            result = b.results.get(cid)
            if result is None:
                r = {"type": "canceled" if b.stopped == "cancelled" else "expired"}
            elif result[0] == "ok":
                r = {"type": "succeeded", "message": result[1]}
            else:
                r = {"type": "errored", "error": {"type": "error", "request_id": None,
                                                  "error": {"type": "api_error", "message": result[1]}}}
            lines.append(json.dumps({"custom_id": cid, "result": r}, ensure_ascii=False) + "\n")
        return "".join(lines).encode()


    def listing(self, api: str, query: dict[str, str]) -> dict:
        """One page of the provider's list of batches, newest first, after the cursor the query names."""
        newest = sorted(self.submitted(api), key=lambda b: (b.created, b.id), reverse=True)
        after = query.get("after" if api == "openai" else "after_id")
        if after:
            ids = [b.id for b in newest]
            newest = newest[ids.index(after) + 1:] if after in ids else []
        limit = int(query.get("limit", 20))
        page = [self.openai_batch(b) if api == "openai" else self.anthropic_batch(b) for b in newest[:limit]]
        out = {"data": page, "has_more": len(newest) > limit, "first_id": page[0]["id"] if page else None,
               "last_id": page[-1]["id"] if page else None}
        return {"object": "list", **out} if api == "openai" else out


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


class _Handler(BaseHTTPRequestHandler):
    peer: BatchServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict | bytes, content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client is gone (a test killed it): nothing to answer
            self.close_connection = True

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self) -> None:
        p, path = self.peer, self.path.split("?")[0]
        parts = path.strip("/").split("/")
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
        if path in ("/v1/batches", "/v1/messages/batches"):
            return self._send(200, p.listing("openai" if path == "/v1/batches" else "anthropic", query))
        if path == "/v1/models":
            return self._send(200, {"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                                                "owned_by": "test"} for m in p.models]})
        if parts[:2] == ["v1", "batches"] and len(parts) == 3 and parts[2] in p.batches:
            return self._send(200, p.openai_batch(p.batches[parts[2]]))
        if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[2] in p.files:
            return self._send(200, p.files[parts[2]], "application/octet-stream")
        if parts[:3] == ["v1", "messages", "batches"] and len(parts) >= 4 and parts[3] in p.batches:
            b = p.batches[parts[3]]
            if len(parts) == 4:
                return self._send(200, p.anthropic_batch(b))
            if parts[4:] == ["results"] and b.ended:
                return self._send(200, p.anthropic_results(b), "application/binary")
        self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": f"no route {path}"}})

    def do_POST(self) -> None:
        p, path = self.peer, self.path.split("?")[0]
        raw = self._body()
        if path == "/v1/files":
            msg = email.parser.BytesParser().parsebytes(
                b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw)
            parts = {part.get_param("name", header="content-disposition"): part for part in msg.get_payload()}
            data = parts["file"].get_payload(decode=True)
            fid = p._id("file")
            p.files[fid] = data
            return self._send(200, {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                                    "filename": parts["file"].get_filename(), "purpose": "batch",
                                    "status": "processed"})
        if path in ("/v1/batches", "/v1/messages/batches") and p.refuse_submissions:
            p.refuse_submissions -= 1
            return self._send(500, {"type": "error", "error": {"type": "api_error", "message": "scripted outage"}})
        if path == "/v1/batches":
            body = json.loads(raw)
            lines = [json.loads(x) for x in p.files[body["input_file_id"]].split(b"\n") if x.strip()]
            b = Batch(p._id("batch"), "openai", lines, int(time.time()), input_file_id=body["input_file_id"],
                      metadata=body.get("metadata"))
            p.start(b)
            p.on_submit(b)
            return self._send(200, {**p.openai_batch(b), "status": "validating"})
        if path == "/v1/messages/batches":
            b = Batch(p._id("msgbatch"), "anthropic", json.loads(raw)["requests"], int(time.time()))
            p.start(b)
            p.on_submit(b)
            return self._send(200, p.anthropic_batch(b))
        if path in ("/v1/chat/completions", "/v1/messages"):
            p.sync_calls += 1
        self._send(403, {"type": "error", "error": {"type": "permission_error",
                                                    "message": f"{path} is not served here: batches only"}})
