"""A fake OpenAI-compatible chat-completions server for end-to-end tests (stdlib only).

Usage: python fake_llm.py LOGFILE [PORT]

Binds 127.0.0.1 (PORT 0 or omitted = a free port chosen by the OS), prints
"PORT <n>" on stdout once it listens, and appends every request as one JSON line
{"t", "method", "path", "body"} to LOGFILE. Answers streaming (SSE) and
non-streaming chat completions with "FAKE-REPLY: ..."; GET .../models lists
"fake-model"; anything else is a 404. With FAKE_LLM_REPLY naming a file that exists, the
reply is that file's text instead. Adapted from the reference server in
the shared Hermes notes.
"""
from __future__ import annotations

import json
import os
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[1] if len(sys.argv) > 1 else "requests.jsonl"
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def reply_for(body: dict) -> dict:
    scripted = os.environ.get("FAKE_LLM_REPLY")  # a file whose text is the reply, while it exists
    if scripted and os.path.exists(scripted):
        with open(scripted, encoding="utf-8") as f:
            return {"role": "assistant", "content": f.read()}
    msgs = body.get("messages", [])
    tools = body.get("tools") or []
    text = "FAKE-REPLY: got it (%d msgs, %d tools)" % (len(msgs), len(tools))
    return {"role": "assistant", "content": text}


def log_request(record: dict) -> None:
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps({"t": time.time(), **record}) + "\n")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, code: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        log_request({"method": "GET", "path": self.path})
        if self.path.rstrip("/").endswith("/models"):
            return self._send(200, {"object": "list", "data": [
                {"id": "fake-model", "object": "model", "owned_by": "me", "context_length": 128000}]})
        self._send(404, {"error": {"message": "not found"}})

    def do_POST(self):
        size = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(size) or b"{}")
        log_request({"method": "POST", "path": self.path, "body": body})
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send(404, {"error": {"message": "not found"}})
        msg = reply_for(body)
        cid = "chatcmpl-" + uuid.uuid4().hex[:10]
        model = body.get("model", "fake-model")
        if not body.get("stream"):
            return self._send(200, {"id": cid, "object": "chat.completion", "created": int(time.time()),
                                    "model": model, "usage": USAGE,
                                    "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}]})
        self._stream(cid, model, msg["content"])

    def _stream(self, cid: str, model: str, content: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

        def event(chunk: dict) -> None:
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()

        def delta(d: dict, finish=None) -> dict:
            return {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": model, "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}

        event(delta({"role": "assistant", "content": ""}))
        for part in (content[:10], content[10:]):
            event(delta({"content": part}))
        event(delta({}, "stop"))
        event({**delta({}), "choices": [], "usage": USAGE})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main() -> None:
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
