"""Round-trip latency of the MCP bridge: `recall_memory` over a real stdio client session.

Fills a fresh HERMES_HOME with synthetic chat (retain_turn, then waits for the vectors), starts
`hermes-cmms mcp` as a subprocess and times `recall_memory` calls from an MCP ClientSession,
client side (JSON-RPC over stdio, hybrid search, JSON result).

    python benchmarks/bridge.py --memories 10000 --calls 200 --json bridge.json
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chat import Chat
from latency import machine, summary_ms, versions

SCOPE = "local:default"


def fill(home: Path, memories: int, chat: Chat) -> float:
    from hermes_cmms import MemoryService, Settings

    started = time.perf_counter()
    with MemoryService(Settings.load(home)) as service:
        turn = 0
        while turn * 2 < memories:
            service.retain_turn(SCOPE, f"fill-{turn // 20:05d}", *chat.turn())
            turn += 1
        assert service.indexer.drain(3600), "indexing did not finish"
    return time.perf_counter() - started


async def measure(home: Path, calls: int, chat: Chat) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                   args=["-m", "hermes_cmms.cli", "mcp", "--hermes-home", str(home)])
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        while "loading" in str((await session.call_tool("ping", {})).content):
            await asyncio.sleep(0.2)
        for _ in range(3):  # warm-up
            await session.call_tool("recall_memory", {"query": chat.question(), "scope": SCOPE})
        times, found = [], 0
        for _ in range(calls):
            query = chat.question()
            t0 = time.perf_counter()
            result = await session.call_tool("recall_memory", {"query": query, "scope": SCOPE, "k": 5})
            times.append(time.perf_counter() - t0)
            found += bool(json.loads(result.content[0].text)["results"])
    return {**summary_ms(times, 50, 95, 99), "nonempty": found}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="cmms-bridge-bench-"))
    chat = Chat(args.seed)
    try:
        fill_s = fill(home, args.memories, chat)
        latency = asyncio.run(measure(home, args.calls, chat))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    result = {"memories": args.memories, "fill_s": round(fill_s, 1), "recall_memory_ms": latency,
              "machine": machine(), "versions": versions()}
    print(f"recall_memory over stdio at {args.memories:,} memories: p50 {latency['p50']:.1f} ms, "
          f"p95 {latency['p95']:.1f} ms, p99 {latency['p99']:.1f} ms ({latency['n']} calls)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
