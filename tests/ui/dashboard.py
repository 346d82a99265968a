"""A real dashboard for the tests: uvicorn serving hermes_cmms.ui on a free 127.0.0.1 port, in
a thread of the test process, over a real store; and an httpx client holding its cookie."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

import httpx
import uvicorn

from hermes_cmms.ui import Door, make_app
from hermes_cmms.ui._serve import bind


@contextmanager
def running(service, **door) -> Iterator[Door]:
    """The dashboard over `service` until the block ends; the Door says its port and secrets."""
    sock = bind("127.0.0.1", 0)
    gate = Door(port=sock.getsockname()[1], **door)
    server = uvicorn.Server(uvicorn.Config(make_app(service, gate), log_level="warning", lifespan="off",
                                           proxy_headers=False, server_header=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the dashboard did not start"
    try:
        yield gate
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def base(door: Door) -> str:
    return f"http://127.0.0.1:{door.port}"


def signed_in(door: Door) -> httpx.Client:
    """A client that opened the printed URL: it holds the cookie the token was traded for."""
    client = httpx.Client(base_url=base(door), timeout=30)
    answer = client.get(f"/?token={door.token}")
    assert answer.status_code == 303 and door.cookie in client.cookies
    return client


def post(client: httpx.Client, door: Door, path: str, data: dict, **headers) -> httpx.Response:
    """A change as the dashboard's own page sends it: same Origin, the CSRF token."""
    return client.post(path, data={"csrf": door.csrf, **data},
                       headers={"origin": base(door), **headers})
