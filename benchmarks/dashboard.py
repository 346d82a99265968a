"""The dashboard (`hermes-cmms ui`) measured and photographed.

    python benchmarks/dashboard.py --memories 100000          # each page's time at that size
    python benchmarks/dashboard.py --home /tmp/h100k          # the same, the store kept there (and reused)
    python benchmarks/dashboard.py --screenshots docs/dashboard   # a PNG of every page
    python benchmarks/dashboard.py --hermes-tab docs/dashboard    # the Memory tab in `hermes dashboard`

Timing: a keyword-only store (CMMS_EMBEDDER=none) in a temporary Hermes home is filled with
synthetic chat turns (benchmarks/chat.py) straight into SQL, 5,000 rows a transaction, as the
store writes them (keyword index kept by its triggers; no vectors, so the `meaning` search is not
timed); then each page is fetched through a real uvicorn on 127.0.0.1 (median of --runs, after
one warm-up), and the recall inspector is timed against a plain prefetch (`recall`) of the same
prompt. Screenshots: a small demo store, the same server, Debian's headless chromium.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from chat import Chat

SCOPE = "local:default"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000, help="Memories in the timed store.")
    parser.add_argument("--runs", type=int, default=5, help="Fetches of each page (the median is reported).")
    parser.add_argument("--screenshots", metavar="DIR", help="Photograph every page into DIR instead.")
    parser.add_argument("--hermes-tab", metavar="DIR", help="Photograph the Memory tab in the real `hermes "
                        "dashboard` into DIR (hermes-tab-<width>.png, a memory's page and the graph).")
    parser.add_argument("--json", metavar="OUT", help="Also write the figures to this file.")
    parser.add_argument("--home", metavar="DIR", help="Keep the timed store in this Hermes home, and reuse it "
                        "when it is there already (filled by an earlier run) instead of filling it again.")
    return parser.parse_args(argv)


def start(service, allow_changes: bool = False):
    """The dashboard over `service` in a thread; (door, server)."""
    import uvicorn

    from hermes_cmms.ui import Door, make_app
    from hermes_cmms.ui._serve import bind

    sock = bind("127.0.0.1", 0)
    door = Door(port=sock.getsockname()[1], allow_changes=allow_changes)
    server = uvicorn.Server(uvicorn.Config(make_app(service, door), log_level="warning", lifespan="off"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return door, server


def fill(service, target: int) -> float:
    """`target` synthetic chat memories in SQL, as the store writes them; seconds taken."""
    from sqlalchemy import insert

    from hermes_cmms.store.models import ConversationSession, Memory
    from hermes_cmms.store.store import NewMemory, Store

    chat, started, count, turn = Chat(seed=11), time.perf_counter(), 0, 0
    while count < target:
        rows, sessions, now = [], [], time.time() - (target - count)  # spread over the last ~day
        while len(rows) < min(5000, target - count):
            session, number = f"chat-{turn // 20:05d}", turn % 20 + 1
            if number == 1:
                sessions.append({"scope": SCOPE, "session_id": session, "started_at": now, "last_turn": 20,
                                 "flushed_at": now})
            for role, content in zip(("user", "assistant"), chat.turn()):
                row = Store._row(NewMemory(SCOPE, content, role=role, session_id=session, source="hermes",
                                           tags=["bulk"] if turn % 7 == 0 else []), now)
                row.update(turn=number)
                rows.append(row)
            turn += 1
        with service.store.write() as conn:
            if sessions:
                conn.execute(insert(ConversationSession), sessions)
            conn.execute(insert(Memory), rows)
        count += len(rows)
    return time.perf_counter() - started


def pages(service) -> dict[str, str]:
    some = service.browse(SCOPE, limit=1)["items"][0]
    session = service.sessions(SCOPE, limit=1)[0]["session_id"]
    return {"overview": "/", "memories": f"/memories?scope={SCOPE}",
            "memories, page 100": f"/memories?scope={SCOPE}&offset=4950",
            "memories, keyword search": f"/memories?scope={SCOPE}&query=kayaking+Lisbon",
            "memories, a common word": f"/memories?scope={SCOPE}&query=love",  # in a quarter of the rows; by relevance
            "memories, a common word, newest first": f"/memories?scope={SCOPE}&query=love&sort=newest",
            "memories, tag + date filter": f"/memories?scope={SCOPE}&tags=bulk&since=2000-01-01&sort=oldest",
            "memory": f"/memory/{some['id']}?scope={SCOPE}",
            "why recalled": f"/inspect?scope={SCOPE}&prompt=Where+did+I+go+kayaking%3F",
            "sessions": f"/sessions?scope={SCOPE}", "session": f"/session/{session}?scope={SCOPE}",
            "beliefs": f"/beliefs?scope={SCOPE}", "graph": f"/graph?scope={SCOPE}&q=Alice",
            "audit": f"/audit?scope={SCOPE}"}


def timed(client, path: str, runs: int):
    """The median milliseconds of `runs` fetches after a warm-up; a page slower than the
    client's timeout is reported as such, once, and not fetched again."""
    import httpx

    times = []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        try:
            client.get(path).raise_for_status()
        except httpx.TimeoutException:
            return f"over {client.timeout.read:.0f} s"
        times.append(time.perf_counter() - t0)
    print(f"  {path}: {statistics.median(times[1:]) * 1000:.1f} ms", file=sys.stderr, flush=True)
    return round(statistics.median(times[1:]) * 1000, 1)


def median_ms(call, runs: int) -> float:
    call()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times) * 1000, 1)


def measure(args) -> dict:
    import httpx

    from hermes_cmms import MemoryService, Settings

    with (contextlib.nullcontext(args.home) if args.home else tempfile.TemporaryDirectory()) as home:
        Path(home).mkdir(parents=True, exist_ok=True)
        (Path(home) / "config.yaml").write_text("memory:\n  provider: cmms\n")
        service = MemoryService(Settings.load(home, embedder="none"), scheduler=False, start_indexer=False)
        fill_s = 0.0
        if service.status()["memories"] == 0:
            fill_s = fill(service, args.memories)
            print(f"filled {args.memories:,} memories in {fill_s:.0f} s", file=sys.stderr, flush=True)
            service.learn(SCOPE, "Alice works at Acme. Bob works at Acme. Alice lives in Lisbon.")
        door, server = start(service)
        client = httpx.Client(base_url=f"http://127.0.0.1:{door.port}", timeout=30)
        client.get(f"/?token={door.token}")
        result = {"memories": service.status()["memories"], "fill_s": round(fill_s, 1),
                  "pages_ms": {name: timed(client, path, args.runs) for name, path in pages(service).items()}}
        prompt = "Where did I go kayaking?"
        result["prefetch_ms"] = median_ms(lambda: service.recall(SCOPE, prompt), args.runs)
        result["inspector_ms"] = median_ms(lambda: service.inspect_recall(SCOPE, prompt), args.runs)
        # a search with a tag and common words (each in a quarter of the rows): every match is ranked
        result["search_tag_common_words_ms"] = median_ms(
            lambda: service.search(SCOPE, "help love", tags=["bulk"]), args.runs)
        server.should_exit = True
        service.close()
    return result


WIDTHS = (1280, 800)  # a laptop's window, and a narrow one (photographed into DIR/800/)


def screenshots(directory: Path) -> list[Path]:
    """Every page of a healthy demo store (the plugin's files installed, the default embedder
    loaded, its vectors written) at each of WIDTHS, each page as tall as it is."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as home:
        service = demo_home(home)
        door, server = start(service, allow_changes=True)
        driver = chromium()
        base = f"http://127.0.0.1:{door.port}"
        driver.get(door.url())
        written = []
        for width in WIDTHS:
            into = directory if width == WIDTHS[0] else directory / str(width)
            into.mkdir(parents=True, exist_ok=True)
            for name, path in shot_pages(service).items():
                driver.set_window_size(width, 900)
                driver.get(base + path)
                height = driver.execute_script("return document.documentElement.scrollHeight")
                driver.set_window_size(width, min(max(height + 20, 600), 4000))
                written.append(into / f"{name}.png")
                driver.save_screenshot(str(written[-1]))
        driver.quit()
        server.should_exit = True
        service.close()
    return written


def demo_home(home: str):
    """A healthy store in `home` to photograph: the plugin's files installed, the default embedder
    loaded, the demo's memories and their vectors written; its service, open."""
    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.cli.commands import main as cli

    (Path(home) / "config.yaml").write_text("memory:\n  provider: cmms\n")
    with contextlib.redirect_stdout(sys.stderr):
        cli(["install-hermes-plugin", "--hermes-home", home])
    service = MemoryService(Settings.load(home), scheduler=False)
    service.upkeep.wait_vectors(120)
    demo(service)
    service.upkeep.drain(60)
    return service


def chromium():
    """Debian's headless Chromium through its chromedriver (nothing downloads a browser)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900", "--hide-scrollbars"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def shot_pages(service) -> dict[str, str]:
    """The pages photographed: every page of the navigation, and what a click opens from them."""
    cat = service.browse(SCOPE, query="coffee black")["items"]  # a corrected memory: its chain shows
    lisbon = service.browse(SCOPE, query="Lisbon", kind="fact")["items"][0]["id"]
    asked = service.session_timeline(SCOPE, "chat-1")["turns"][-1]["stored"]  # the page's "Run this prompt again now"
    rerun = f"/inspect?scope={SCOPE}&from_memory={asked[0]['memory_id']}" + "".join(
        f"&leave_out={s['memory_id']}" for s in asked)
    return {"why-recalled-rerun": rerun, "overview": "/", "memories": f"/memories?scope={SCOPE}",
            "memories-meaning": f"/memories?scope={SCOPE}&query=hot+drinks&mode=meaning",
            "memory": f"/memory/{cat[0]['id']}?scope={SCOPE}&done=corrected",
            "why-recalled": f"/inspect?scope={SCOPE}&prompt=What+is+my+cat+called%3F&why_not={lisbon}",
            "sessions-list": f"/sessions?scope={SCOPE}", "sessions": f"/session/chat-1?scope={SCOPE}",
            "beliefs": f"/beliefs?scope={SCOPE}", "graph-start": f"/graph?scope={SCOPE}",
            "graph": f"/graph?scope={SCOPE}&q=Alice", "graph-paths": f"/graph?scope={SCOPE}&from=Alice&to=Bob",
            "audit": f"/audit?scope={SCOPE}", "forget-preview": f"/forget?scope={SCOPE}&id={cat[0]['id']}"}


def demo(service) -> None:
    """A small store worth looking at: turns in two sessions, a correction, notes, beliefs, a graph."""
    service.retain_turn(SCOPE, "chat-1", "I adopted a cat, she is called Biscuit", "Biscuit is a lovely name!")
    service.recall(SCOPE, "What is my cat called?", session_id="chat-1")
    service.retain_turn(SCOPE, "chat-1", "What is my cat called?", "Your cat is called Biscuit.")
    service.retain_turn(SCOPE, "chat-2", "I moved from Berlin to Lisbon last month", "How is Lisbon treating you?")
    old = service.remember(SCOPE, "I drink my coffee with milk", tags=["food"], source="mcp:store_memory")
    service.correct(SCOPE, old, "I drink my coffee black", actor="ui")
    service.remember(SCOPE, "Dentist appointment on Friday at 10:00", tags=["calendar"])
    service.remember(SCOPE, "A note that tries <script>alert(1)</script> and a bidi \u202etxet\u202c trick")
    service.learn(SCOPE, "Alice works at Acme. Bob works at Acme. Alice lives in Lisbon. Bob lives in Porto.")
    service.set_belief(SCOPE, "Coffee is good for me", confidence=0.9)
    service.set_belief(SCOPE, "Coffee is not good for me", confidence=0.6)


def hermes_tab(directory: Path) -> list[Path]:
    """The Memory tab in Hermes' own dashboard (`hermes dashboard`, the Hermes installed beside this
    Python) over the same demo store, at each of WIDTHS: its overview, a memory's page, the graph."""
    import os
    import signal
    import subprocess

    from selenium.webdriver.support.ui import WebDriverWait

    from hermes_cmms.ui._serve import bind

    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as home:
        service = demo_home(home)
        cat = service.browse(SCOPE, query="coffee black")["items"][0]["id"]
        service.close()
        with bind("127.0.0.1", 0) as sock:
            port = sock.getsockname()[1]
        log = Path(home) / "dashboard.log"
        env = dict(os.environ, HERMES_HOME=home)
        with log.open("wb") as out:
            proc = subprocess.Popen([str(Path(sys.executable).with_name("hermes")), "dashboard", "--no-open",
                                     "--skip-build", "--isolated", "--port", str(port)], env=env, cwd=home,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        driver = chromium()
        written = []
        try:
            deadline = time.monotonic() + 90
            while b"HERMES_DASHBOARD_READY" not in log.read_bytes():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(log.read_text(errors="replace"))
                time.sleep(0.2)
            shown = {"": "/", "-memory": f"/memory/{cat}?scope={SCOPE}", "-graph": f"/graph?scope={SCOPE}&q=Alice"}
            for width in WIDTHS:
                for suffix, path in shown.items():
                    driver.set_window_size(width, 900)
                    driver.get(f"http://127.0.0.1:{port}/cmms#{path}")
                    WebDriverWait(driver, 60).until(lambda d: d.execute_script(
                        "var t = document.querySelector('.cmms-tab'); return t && t.dataset.path === arguments[0] "
                        "&& document.getElementById('cmms-style') && document.getElementById('cmms-style').textContent",
                        path))
                    height = driver.execute_script("var t = document.querySelector('.cmms-tab'); "
                                                   "return t.getBoundingClientRect().top + t.scrollHeight")
                    driver.set_window_size(width, min(max(int(height) + 140, 600), 4000))  # the window's own bars
                    written.append(directory / f"hermes-tab{suffix}-{width}.png")
                    driver.save_screenshot(str(written[-1]))
        finally:
            driver.quit()
            os.killpg(proc.pid, signal.SIGTERM)  # the dashboard's own process group, started above
            proc.wait(15)
    return written


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.hermes_tab:
        for path in hermes_tab(Path(args.hermes_tab)):
            print(path)
        return
    if args.screenshots:
        for path in screenshots(Path(args.screenshots)):
            print(path)
        return
    result = measure(args)
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
