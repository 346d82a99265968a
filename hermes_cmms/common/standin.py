"""An offline stand-in model: an OpenAI-compatible chat-completions server on 127.0.0.1 (stdlib only).

`hermes-cmms demo` runs real Hermes turns against it, and the tests start it as their fake model
(`python -m hermes_cmms.common.standin LOGFILE [PORT]`, or `tests/fake_llm.py`, which runs this).
It answers streaming (SSE) and plain chat completions; GET .../models lists "fake-model";
anything else is a 404. What it answers:

- by default, "FAKE-REPLY: got it (N msgs, M tools)";
- with a scripted reply (a file, while it exists: FAKE_LLM_REPLY for the script), that file's text;
- with `echo`, what recall gave it: the lines of the `<memory-context>` block Hermes appended to
  the user's message, so a person sees recall working (the demo's replies).

Every request may be appended to a log as one JSON line {"t", "method", "path", "body"}. As a
script it prints "PORT <n>" once it listens (PORT 0 or omitted: a free port the OS chooses).
"""
from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Optional

MODEL = "fake-model"
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
BLOCK = re.compile(r"<memory-context>(.*?)</memory-context>", re.S)
ECHO_LINES = 6  # most recalled lines an echo repeats


def last_user_text(body: dict) -> str:
    """The text of the request's last user message ("" when there is none)."""
    users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    if isinstance(content, list):  # content parts
        content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def recalled_lines(body: dict) -> list[str]:
    """The memory lines (`- kind: text`) of the memory-context block on the last user message."""
    blocks = BLOCK.findall(last_user_text(body))
    return [line.strip() for line in (blocks[-1] if blocks else "").splitlines() if line.strip().startswith("- ")]


def echo_reply(body: dict) -> str:
    """What the demo's model says, on one line: to a question, the memories recall put before it
    (but its own earlier replies); to anything else, that it noted it and how many came with it."""
    lines = [line[2:] for line in recalled_lines(body)]
    asked = last_user_text(body).split("<memory-context>", 1)[0].strip().endswith("?")
    told = [line for line in lines if not line.startswith("assistant")]  # what the user said, what was learned
    if asked and told:
        more = f" · and {len(told) - ECHO_LINES} more" if len(told) > ECHO_LINES else ""
        return f"(stand-in model) From memory: {' · '.join(told[:ECHO_LINES])}{more}"
    if asked:
        return "(stand-in model) I cannot say: nothing was recalled for this."
    return f"(stand-in model) Noted. ({len(lines) or 'No'} memor{'y' if len(lines) == 1 else 'ies'} came with it.)"


def reply_for(body: dict, scripted: Optional[str] = None, echo: bool = False) -> dict:
    if scripted and os.path.exists(scripted):  # a file whose text is the reply, while it exists
        return {"role": "assistant", "content": Path(scripted).read_text(encoding="utf-8")}
    if echo:
        return {"role": "assistant", "content": echo_reply(body)}
    text = "FAKE-REPLY: got it (%d msgs, %d tools)" % (len(body.get("messages", [])), len(body.get("tools") or []))
    return {"role": "assistant", "content": text}


class StandIn(ThreadingHTTPServer):
    """The server; `log`, `scripted` and `echo` say what it records and answers."""

    daemon_threads = True

    def __init__(self, port: int = 0, log: Optional[str] = None, scripted: Optional[str] = None, echo: bool = False):
        super().__init__(("127.0.0.1", port), Handler)
        self.log, self.scripted, self.echo = log, scripted, echo
        self.recalled: list[list[str]] = []  # each chat request's memory lines, in order

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def record(self, record: dict) -> None:
        if self.log:
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(json.dumps({"t": time.time(), **record}) + "\n")


class Handler(BaseHTTPRequestHandler):
    server: StandIn

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
        self.server.record({"method": "GET", "path": self.path})
        if self.path.rstrip("/").endswith("/models"):
            return self._send(200, {"object": "list", "data": [
                {"id": MODEL, "object": "model", "owned_by": "me", "context_length": 128000}]})
        self._send(404, {"error": {"message": "not found"}})

    def do_POST(self):
        size = int(self.headers.get("Content-Length", 0))
        try:
            body = json.loads(self.rfile.read(size) or b"{}")
        except ValueError:
            return self._send(400, {"error": {"message": "The request body is not JSON."}})
        self.server.record({"method": "POST", "path": self.path, "body": body})
        if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(body, dict):
            return self._send(404, {"error": {"message": "not found"}})
        self.server.recalled.append(recalled_lines(body))
        msg = reply_for(body, self.server.scripted, self.server.echo)
        cid = "chatcmpl-" + uuid.uuid4().hex[:10]
        model = body.get("model", MODEL)
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


def start(port: int = 0, **options) -> StandIn:
    """A stand-in serving on a thread of this process; `server.shutdown()` and
    `server.server_close()` stop it (the demo does both, whatever happens)."""
    server = StandIn(port, **options)
    threading.Thread(target=server.serve_forever, name="cmms-standin-model", daemon=True).start()
    return server


def main(argv: Optional[list[str]] = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    log = argv[0] if argv else "requests.jsonl"
    port = int(argv[1]) if len(argv) > 1 else 0
    server = StandIn(port, log=log, scripted=os.environ.get("FAKE_LLM_REPLY"))
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
