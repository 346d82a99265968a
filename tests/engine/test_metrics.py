"""Metrics and tracing on real services: tool calls through the MCP and Hermes doors, hook
timings, store gauges read back against SQL, drift after an audit, and OpenTelemetry spans
with an SDK tracer provider (in a subprocess: the global provider can be set only once; this
process never sets one)."""
from __future__ import annotations

import json
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from conftest import python, subprocess_env
from hermes_cmms.common import tracing
from hermes_cmms.ops import audit
from hermes_cmms.mcp_bridge.server import sdk
from hermes_cmms.mcp_bridge.tools import catalogue, guarded
from hermes_cmms.ops.metrics import MAX_TOOL_LABELS, exposition
from inprocess import memory_bridge
from mcp_client import run

pytestmark = pytest.mark.store

SCOPE = "test:metrics"
QUIET = {"CMMS_EMBEDDER": "none", "CMMS_SCHEDULER": "off", "CMMS_MIRROR": "off"}


def _samples(text_format: str) -> dict:
    """{(sample name, frozenset of labels): value} of a text exposition, parsed by prometheus_client."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text_format) for s in family.samples}


def _value(samples: dict, name: str, **labels):
    return samples.get((name, frozenset(labels.items())))


def _sql(svc, query: str) -> list:
    with svc.store.read() as conn:
        return conn.execute(text(query)).all()


def _mcp_tools(svc):
    _, tool_error, _ = sdk()
    return {fn.__name__: guarded(fn, tool_error, metrics=svc.metrics) for fn in catalogue(svc, SCOPE)}, tool_error


@pytest.mark.quick
def test_mcp_tool_calls_are_counted_timed_and_errors_marked(keyword_service):
    svc = keyword_service
    tools, tool_error = _mcp_tools(svc)
    for _ in range(2):
        tools["remember"](subject="Ana", predicate="lives in", object="Lisbon")
    tools["list_memories"](scope=SCOPE)
    with pytest.raises(tool_error, match="must be a whole number"):
        tools["store_memory"](content="Parked on level 3", scope=SCOPE, ttl_seconds="soon")
    with pytest.raises(tool_error, match="Unknown memory id"):
        tools["forget_memory"](scope=SCOPE, memory_id="nope")
    samples = _samples(exposition(svc))
    calls = {tool: _value(samples, "cmms_tool_calls_total", door="mcp", tool=tool)
             for tool in ("remember", "list_memories", "store_memory", "forget_memory")}
    assert calls == {"remember": 2.0, "list_memories": 1.0, "store_memory": 1.0, "forget_memory": 1.0}
    errors = {tool: _value(samples, "cmms_tool_errors_total", door="mcp", tool=tool) for tool in calls}
    assert errors == {"remember": None, "list_memories": None, "store_memory": 1.0, "forget_memory": 1.0}
    assert _value(samples, "cmms_tool_latency_seconds_count", door="mcp", tool="remember") == 2.0
    assert _value(samples, "cmms_tool_latency_seconds_sum", door="mcp", tool="remember") > 0
    assert _value(samples, "cmms_tool_latency_seconds_bucket", door="mcp", tool="remember", le="+Inf") == 2.0
    assert _value(samples, "cmms_hook_latency_seconds_count", hook="retain") == 2.0  # remember, twice
    assert _sql(svc, "SELECT count(*) FROM memories") == [(1,)]  # the calls really ran: one fact, reinforced


def test_hermes_tool_calls_are_counted_per_tool_with_errors(home, monkeypatch):
    from hermes_cmms.provider import CmmsMemoryProvider

    for name, value in QUIET.items():
        monkeypatch.setenv(name, value)
    p = CmmsMemoryProvider()
    p.initialize("s1", hermes_home=str(home), platform="cli", agent_context="primary", agent_identity="default")
    try:
        assert "id" in json.loads(p.handle_tool_call("cmms_remember", {"content": "The garage door code is 4417"}))
        assert "results" in json.loads(p.handle_tool_call("cmms_recall", {"query": "garage code"}))
        assert "error" in json.loads(p.handle_tool_call("cmms_recall", {"query": "garage", "limit": 999}))
        assert "error" in json.loads(p.handle_tool_call("cmms_teleport", {}))
        samples = _samples(exposition(p.service))
    finally:
        p.shutdown()
    assert {tool: _value(samples, "cmms_tool_calls_total", door="hermes", tool=tool)
            for tool in ("cmms_remember", "cmms_recall", "cmms_teleport")} == {
        "cmms_remember": 1.0, "cmms_recall": 2.0, "cmms_teleport": 1.0}
    assert {tool: _value(samples, "cmms_tool_errors_total", door="hermes", tool=tool)
            for tool in ("cmms_remember", "cmms_recall", "cmms_teleport")} == {
        "cmms_remember": None, "cmms_recall": 1.0, "cmms_teleport": 1.0}
    assert _value(samples, "cmms_tool_latency_seconds_count", door="hermes", tool="cmms_recall") == 2.0


def test_tool_names_past_the_label_limit_count_as_other(keyword_service):
    svc = keyword_service
    for n in range(MAX_TOOL_LABELS + 6):
        with svc.metrics.tool_call("hermes", f"made_up_{n}"):
            pass
    calls = {dict(labels)["tool"]: value for (name, labels), value in _samples(exposition(svc)).items()
             if name == "cmms_tool_calls_total"}
    assert len(calls) == MAX_TOOL_LABELS + 1 and calls["other"] == 6.0


def test_an_exception_inside_a_tool_call_is_counted_and_re_raised(keyword_service):
    svc = keyword_service
    with pytest.raises(ZeroDivisionError):
        with svc.metrics.tool_call("mcp", "divide"):
            1 / 0
    samples = _samples(exposition(svc))
    assert _value(samples, "cmms_tool_errors_total", door="mcp", tool="divide") == 1.0
    assert _value(samples, "cmms_tool_calls_total", door="mcp", tool="divide") == 1.0


def test_store_gauges_match_sql_and_show_index_lag(keyword_service):
    svc = keyword_service  # keyword-only: nothing drains the outbox, so every write is lag
    svc.retain_turn(SCOPE, "s1", "I moved to Lisbon last spring.", "Lisbon is lovely.", source="hermes:cli")
    svc.remember(SCOPE, "The garage door code is 4417", source="mcp:store_memory")
    svc.remember(SCOPE, "Maybe the plumber is called Tavares", source="mcp:store_memory", confidence=0.3)
    svc.remember(SCOPE, "Parked on level 3", source="mcp:store_memory", ttl_seconds=600)
    [(pending, oldest)] = _sql(svc, "SELECT count(*), min(created_at) FROM outbox")
    before = time.time()
    samples = _samples(exposition(svc))
    by_state = {(tier, state): float(n) for tier, state, n in
                _sql(svc, "SELECT tier, state, count(*) FROM memories GROUP BY tier, state")}
    gauges = {(dict(labels)["tier"], dict(labels)["state"]): value for (name, labels), value in samples.items()
              if name == "cmms_memories"}
    assert gauges == by_state and ("semantic", "candidate") in gauges and sum(gauges.values()) == 5
    assert _value(samples, "cmms_index_lag") == pending == 5
    assert before - oldest <= _value(samples, "cmms_index_lag_seconds") <= time.time() - oldest
    assert _value(samples, "cmms_vectors") is None  # no vector index to count


def test_vector_gauge_counts_the_index_and_lag_drains_to_zero(service):
    for note in ("The garage door code is 4417", "Invoices are filed in the green cabinet",
                 "The blue bicycle has a flat rear tyre"):
        service.remember(SCOPE, note, source="mcp:store_memory")
    assert service.upkeep.drain(180)
    samples = _samples(exposition(service))
    assert _value(samples, "cmms_vectors") == service.indexer.vectors.count() == 3
    assert _value(samples, "cmms_index_lag") == 0 and _value(samples, "cmms_index_lag_seconds") == 0


def test_drift_gauges_follow_the_last_audit_run(keyword_service):
    svc = keyword_service
    memory_id = svc.remember(SCOPE, "The garage door code is 4417", source="mcp:store_memory")
    before = _samples(exposition(svc))
    assert {_value(before, "cmms_drift", type=t) for t in audit.AUDIT_TYPES} == {0.0}
    assert _value(before, "cmms_audit_last_run_timestamp") == 0
    with svc.store._write_lock, svc.store.write() as conn:
        conn.execute(text("INSERT INTO facts (memory_id, scope, subject, predicate, object) "
                          "VALUES ('0123456789abcdef0123456789abcdef', :s, 'x', 'y', 'z')"), {"s": SCOPE})
        conn.execute(text("UPDATE memories SET state = 'zombie' WHERE id = :m"), {"m": memory_id})
    started = time.time()
    audit.run(svc)
    after = _samples(exposition(svc))
    assert {t: _value(after, "cmms_drift", type=t) for t in audit.AUDIT_TYPES} == {
        **{t: 0.0 for t in audit.AUDIT_TYPES}, "orphans": 1.0, "lifecycle": 1.0}
    assert started <= _value(after, "cmms_audit_last_run_timestamp") <= time.time()
    from hermes_cmms import MemoryService

    with MemoryService(svc.settings, scheduler=False) as elsewhere:  # e.g. `hermes-cmms metrics` later
        seen = _samples(exposition(elsewhere))
    assert _value(seen, "cmms_drift", type="orphans") == 1.0  # read back from the audit trail


def test_drift_gauges_move_only_with_a_full_audit(keyword_service):
    svc = keyword_service
    svc.remember(SCOPE, "The garage door code is 4417", source="mcp:store_memory")
    with svc.store._write_lock, svc.store.write() as conn:
        conn.execute(text("INSERT INTO facts (memory_id, scope, subject, predicate, object) "
                          "VALUES ('0123456789abcdef0123456789abcdef', 'test:elsewhere', 'x', 'y', 'z')"))
    audit.run(svc)
    full = _samples(exposition(svc))
    assert _value(full, "cmms_drift", type="orphans") == 1.0
    stamp = _value(full, "cmms_audit_last_run_timestamp")
    assert audit.run(svc, "all", SCOPE)["ok"]  # this scope is clean; the store is not
    assert audit.run(svc, "lifecycle")["ok"]  # this type is clean; the store is not
    after = _samples(exposition(svc))
    assert _value(after, "cmms_drift", type="orphans") == 1.0
    assert _value(after, "cmms_audit_last_run_timestamp") == stamp


def test_hook_calls_are_timed_per_hook(keyword_service):
    svc = keyword_service
    for note in ("The garage door code is 4417", "Invoices are filed in the green cabinet"):
        svc.remember(SCOPE, note, source="mcp:store_memory")
    svc.retain_turn(SCOPE, "s1", "Where are the invoices?", "In the green cabinet.", source="hermes:cli")
    svc.recall(SCOPE, "Where are the invoices?")
    samples = _samples(exposition(svc))
    counts = {hook: _value(samples, "cmms_hook_latency_seconds_count", hook=hook)
              for hook in ("retain", "recall", "session_flush")}
    assert counts == {"retain": 3.0, "recall": 1.0, "session_flush": None}
    assert _value(samples, "cmms_hook_latency_seconds_sum", hook="retain") > 0
    svc.flush_session(SCOPE, "s1")
    assert _value(_samples(exposition(svc)), "cmms_hook_latency_seconds_count", hook="session_flush") == 1.0


SPANS = textwrap.dedent("""
    import json, sys
    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.ops import metrics
    from hermes_cmms.mcp_bridge.server import sdk
    from hermes_cmms.mcp_bridge.tools import catalogue, guarded

    svc = MemoryService(Settings.load(sys.argv[1]), scheduler=False)  # made before any provider is set
    exporter = None
    if sys.argv[2] == "sdk":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        exporter, provider = InMemorySpanExporter(), TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
    _, tool_error, _ = sdk()
    tools = {fn.__name__: guarded(fn, tool_error, metrics=svc.metrics) for fn in catalogue(svc, "test:spans")}
    tools["store_memory"](content="The garage door code is 4417", scope="test:spans")
    tools["learn"](text="I live in Porto.")
    try:
        tools["forget_memory"](scope="test:spans", memory_id="nope")
    except tool_error:
        pass
    from hermes_cmms.provider import CmmsMemoryProvider
    p = CmmsMemoryProvider()
    p.initialize("s1", hermes_home=sys.argv[1], platform="cli", agent_context="primary", agent_identity="default")
    p.handle_tool_call("cmms_recall", {"query": "garage"})
    p.shutdown()
    out = {"tracer": metrics.tracer() is not None,
           "calls": "cmms_tool_calls_total" in metrics.exposition(svc)}
    if exporter is not None:
        out["spans"] = [{"name": s.name, "attributes": dict(s.attributes), "status": s.status.status_code.name,
                         "id": s.context.span_id, "parent": s.parent.span_id if s.parent else None}
                        for s in exporter.get_finished_spans()]
    svc.close()
    print(json.dumps(out))
""")


def _spans_run(home, mode: str) -> dict:
    done = subprocess.run([python(), "-c", SPANS, str(home), mode], capture_output=True, text=True, timeout=300,
                          env=subprocess_env(home, **QUIET))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_spans_are_recorded_with_an_sdk_provider_set_after_the_service(home):
    out = _spans_run(home, "sdk")
    assert out["tracer"] and out["calls"]
    spans = {s["name"]: s for s in out["spans"]}
    stored, failed = spans["cmms.tool store_memory"], spans["cmms.tool forget_memory"]
    assert stored["attributes"] == {"door": "mcp", "tool": "store_memory", "scope": "test:spans", "ok": True}
    assert stored["status"] == "UNSET"
    assert failed["attributes"]["ok"] is False and failed["status"] == "ERROR"
    assert "Unknown memory id 'nope'" in failed["attributes"]["error"]
    [retain] = [s for s in out["spans"] if s["name"] == "cmms.hook retain" and s["parent"] == stored["id"]]
    assert retain["attributes"] == {"hook": "retain", "ok": True}  # the hook runs inside the tool call
    learned = spans["cmms.tool learn"]["id"]
    for hook in ("redact", "extract"):  # called outside pm.hook, traced all the same
        assert any(s["name"] == f"cmms.hook {hook}" and s["parent"] == learned for s in out["spans"]), hook
    recall = spans["cmms.tool cmms_recall"]
    assert recall["attributes"] == {"door": "hermes", "tool": "cmms_recall", "scope": "local:default", "ok": True}


def test_without_an_sdk_provider_no_span_is_made_and_calls_still_count(keyword_service, home, monkeypatch):
    """SPANS' calls made in this process, which sets no provider: no tracer, no span, and
    the calls are counted all the same."""
    from hermes_cmms.provider import CmmsMemoryProvider

    for name, value in QUIET.items():
        monkeypatch.setenv(name, value)
    svc = keyword_service
    _, tool_error, _ = sdk()
    tools = {fn.__name__: guarded(fn, tool_error, metrics=svc.metrics) for fn in catalogue(svc, "test:spans")}
    tools["store_memory"](content="The garage door code is 4417", scope="test:spans")
    tools["learn"](text="I live in Porto.")
    with pytest.raises(tool_error):
        tools["forget_memory"](scope="test:spans", memory_id="nope")
    p = CmmsMemoryProvider()
    p.initialize("s1", hermes_home=str(home), platform="cli", agent_context="primary", agent_identity="default")
    p.handle_tool_call("cmms_recall", {"query": "garage"})
    p.shutdown()
    assert tracing.tracer() is None and tracing.Span("cmms.tool probe").span is None
    assert "cmms_tool_calls_total" in exposition(svc)


def test_a_real_mcp_session_reports_its_own_calls(home):
    async def main():
        async with memory_bridge(home, env=QUIET) as bridge:
            await bridge.ok("remember", subject="Ana", predicate="lives in", object="Lisbon")
            failed = await bridge.call("forget_memory", scope=SCOPE, memory_id="nope")
            return failed, await bridge.ok("metrics")

    failed, scraped = run(main())
    assert failed.error
    samples = _samples(scraped["exposition"])
    assert _value(samples, "cmms_tool_calls_total", door="mcp", tool="remember") == 1.0
    assert _value(samples, "cmms_tool_errors_total", door="mcp", tool="forget_memory") == 1.0
    assert _value(samples, "cmms_memories", tier="semantic", state="active") == 1.0


def test_the_health_page_describes_every_metric(keyword_service):
    page = (Path(__file__).resolve().parents[2] / "docs" / "health.md").read_text()
    with keyword_service.metrics.tool_call("mcp", "ping"):
        pass
    names = {family.name for family in text_string_to_metric_families(exposition(keyword_service))
             if not family.name.endswith("_created")}  # prometheus_client's creation times
    assert {"cmms_tool_calls", "cmms_tool_latency_seconds", "cmms_memories", "cmms_drift"} <= names
    for name in names:
        documented = f"`{name}_total`" if name in ("cmms_tool_calls", "cmms_tool_errors") else f"`{name}`"
        assert documented in page, name
