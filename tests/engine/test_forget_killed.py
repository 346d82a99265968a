"""A forget --all killed at any moment: the process forgetting a scope is SIGKILLed at each of
its write transactions in turn (before that write lands, so every state a kill can leave is
seen), one scope per kill. Then nothing of any such scope is readable at any door, the audit
says a forget is in progress instead of finding orphans, and the scheduler finishes every one
without anybody running the forget again."""
from __future__ import annotations

import json
import subprocess
import textwrap
import time

import pytest

from hermes_cmms.hermes.tools import call_tool
from db import sql
from inprocess import cli, memory_bridge
from mcp_client import run

from conftest import python, subprocess_env

pytestmark = [pytest.mark.store, pytest.mark.slow]

OTHER = "local:kept"
QUERY = "Where did I park the Vintorra van?"

# Forks one child per "scope=N": it runs forget_all(scope) and is SIGKILLed as its Nth write
# transaction commits (before the commit lands). Without a kill it prints how many writes it made.
WORKER = textwrap.dedent("""
    import os, signal, sys
    from sqlalchemy import event
    from hermes_cmms import MemoryService, Settings

    for arg in sys.argv[2:]:
        scope, at = arg.rsplit("=", 1)
        child = os.fork()
        if child == 0:
            service = MemoryService(Settings.load(sys.argv[1], embedder="none"), scheduler=False,
                                    start_indexer=False)
            writes = 0

            def commit(conn):
                global writes
                if conn.get_execution_options().get("cmms_write"):
                    writes += 1
                    if writes == int(at):
                        os.kill(os.getpid(), signal.SIGKILL)
            event.listen(service.store.engine, "commit", commit)
            service.forget_all(scope, actor="cli")
            print("finished", scope, writes, flush=True)
            os._exit(0)
        _, status = os.waitpid(child, 0)
        print("killed" if os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9 else "exited", scope, flush=True)
""")


def _fill(service, scope: str) -> None:
    """Memories with a fact (graph), a belief (evidence), a conversation (session), events."""
    for n, thing in enumerate(("garden gate", "boiler", "bicycle lock", "spare key")):
        service.remember(scope, f"The code of the {thing} is {4711 + n}")
    service.remember_fact(scope, "Ana Lindqvist", "works at", "Quorvex Industries")
    service.set_belief(scope, "The staging server Pelmora is stable", confidence=0.8)
    service.retain_turn(scope, "s1", "I parked the Vintorra van at the north pier", "Noted: the north pier")


def _forget_in(home, kills: dict[str, int]) -> list[str]:
    done = subprocess.run([python(), "-c", WORKER, str(home), *(f"{s}={n}" for s, n in kills.items())],
                          env=subprocess_env(home), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split("\n")


async def _doors(home, service, scope: str) -> dict:
    """What each door shows of `scope` (`service`: Hermes' provider's)."""
    async with memory_bridge(home, "--scope", scope) as bridge:
        metrics, ping = (await bridge.ok("metrics"))["exposition"], await bridge.ok("ping")
        return {
            "ping": [ping["memories"], ping["indexed"]],
            "recall_memory": (await bridge.ok("recall_memory", query=QUERY, scope=scope))["results"],
            "list_memories": (await bridge.ok("list_memories", scope=scope))["total"],
            "search": (await bridge.ok("search", query=QUERY))["memories"],
            "get_context": (await bridge.ok("get_context", task=QUERY))["memories"],
            "get_belief": (await bridge.ok("get_belief"))["total"],
            "graph_search": (await bridge.ok("graph_search", query="Where does Ana Lindqvist work?"))["entities"],
            "metrics": [line for line in metrics.splitlines() if line.startswith("cmms_memories{")],
            "hermes recall": service.recall(scope, QUERY),
            "cmms_recall": call_tool(service, scope, "cmms_recall", {"query": QUERY})["results"],
            "cli search": "No memories match" not in cli(home, "search", "--scope", scope, QUERY).stdout,
            "cli export": sum(json.loads(line)["type"] not in ("header", "audit")  # (the trail stays, blanked)
                              for line in cli(home, "export", "--scope", scope).stdout.splitlines()),
        }


NOTHING = {"ping": [0, 0], "hermes recall": "", "cmms_recall": [], "recall_memory": [], "list_memories": 0, "search": [], "get_context": [], "get_belief": 0,
           "graph_search": [], "metrics": [], "cli search": False, "cli export": 0}


def _audit(home) -> dict:
    ran = cli(home, "audit", "--json")
    assert ran.stdout.startswith("{"), ran
    return json.loads(ran.stdout)


def test_a_forget_all_killed_at_any_write_hides_the_scope_and_the_scheduler_finishes_it(service, home):
    from hermes_cmms.lifecycle.scheduler import Scheduler
    from hermes_cmms.upkeep import FORGET_STALLED_S

    _fill(service, "local:whole")
    [finished] = [line for line in _forget_in(home, {"local:whole": 10**6}) if line.startswith("finished")]
    writes = int(finished.split()[-1])  # what one whole forget --all of such a scope writes
    scopes = {f"local:killed-{n}": n for n in range(2, writes + 1)}  # the 1st: the mark never landed
    for scope in [OTHER, *scopes]:
        _fill(service, scope)
    assert service.upkeep.drain(120)
    assert _forget_in(home, scopes) == [f"killed {s}" for s in scopes] + [""]
    assert service.upkeep.drain(120)  # the vectors the killed forgets queued for removal: gone

    audit = _audit(home)
    marked = [s for s in scopes if sql(service, "SELECT count(*) FROM forgetting WHERE scope = ?", s)[0][0]]
    assert len(marked) >= writes - 3, marked  # the kill came before its end in most of them
    assert audit["forgetting"] == sorted(marked) and audit["counts"]["orphans"] == 0, audit
    assert not [f for found in audit["findings"].values() for f in found if f["scope"] in scopes], audit
    assert all(any(scope in w and "in progress" in w for w in audit["warnings"]) for scope in marked)
    assert f"wait forget --all of {marked[0]!r} in progress" in cli(home, "audit").stdout
    for scope in scopes:
        assert run(_doors(home, service, scope)) == NOTHING, scope
    seen = run(_doors(home, service, OTHER))  # the same reads find a scope that is not being forgotten
    assert all(seen[door] != nothing for door, nothing in NOTHING.items()), seen

    # The scheduler of a process that shares the store (a gateway, a bridge) finishes them all.
    scheduler = Scheduler(service.store, {"sweep": (service.settings.sweep_interval_s, service.upkeep.sweep)})
    now = time.time()
    scheduler.step(now)  # a first lease starts the job clocks
    assert scheduler.step(now + FORGET_STALLED_S + service.settings.sweep_interval_s) == ["sweep"]
    left = sql(service, "SELECT scope, count(*) FROM memories WHERE scope LIKE 'local:killed-%' GROUP BY scope")
    assert left == [] and sql(service, "SELECT count(*) FROM forgetting")[0][0] == 0
    for scope in scopes:
        [(actor,)] = sql(service, "SELECT actor FROM audit_log WHERE action = 'forget_all' AND memory_id IS NULL "
                                  "AND scope = ?", scope)
        assert actor == "cli"
    after = _audit(home)
    assert after["forgetting"] == [] and after["counts"]["orphans"] == 0, after
    assert run(_doors(home, service, OTHER)) == seen
