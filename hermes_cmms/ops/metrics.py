"""Metrics and traces of one MemoryService: Prometheus counters and histograms of tool and hook
calls, store gauges computed when scraped, and OpenTelemetry spans (only when the application
has set an SDK tracer provider). See docs/health.md."""
from __future__ import annotations

import json
import logging
import threading
import time
import weakref
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Optional, Protocol

import pluggy

from ..common.vocabulary import AUDIT_TYPES
from ..common.tracing import TRACER_NAME, Span, tracer  # noqa: F401 - TRACER_NAME, tracer: re-exported
from ..store import gauges
from ..common.text import clean_key

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from ..engine import Engine
    from ..store.store import Store
    from ..vectors.indexer import Indexer

log = logging.getLogger(__name__)

MAX_TOOL_LABELS = 64  # distinct tool names kept as labels; any further name counts as "other"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

_hooks = threading.local()  # the open hook calls of this thread, innermost last
_monitored: "weakref.WeakSet[pluggy.PluginManager]" = weakref.WeakSet()


# -- hooks --------------------------------------------------------------------------------

def monitor_hooks(pm: pluggy.PluginManager) -> None:
    """Time and trace every hook call of `pm` (once per plugin manager). The time goes to the
    metrics of the service the hook is called with (its `service` argument)."""
    if pm in _monitored:
        return
    _monitored.add(pm)
    pm.add_hookcall_monitoring(_before_hook, _after_hook)


def _before_hook(hook_name: str, hook_impls, kwargs: dict) -> None:
    stack = _hooks.__dict__.setdefault("open", [])
    stack.append((Span(f"cmms.hook {hook_name}", hook=hook_name), time.perf_counter()))


def _after_hook(outcome, hook_name: str, hook_impls, kwargs: dict) -> None:
    span, started = _hooks.open.pop()
    metrics = getattr(kwargs.get("service"), "metrics", None)
    if isinstance(metrics, Metrics):
        metrics.hook_latency.labels(hook_name).observe(time.perf_counter() - started)
    failure = outcome.exception
    span.end(f"{type(failure).__name__}: {failure}" if failure is not None else None, failure)


# -- tool calls ---------------------------------------------------------------------------

class ToolCall:
    """One tool call in progress. A door that answers an error instead of raising one calls
    `fail(message)`; an exception marks the call failed by itself."""

    def __init__(self, span: Span):
        self.span = span
        self.error: Optional[str] = None

    def fail(self, message: str) -> None:
        self.error = message or "error"


class Parts(Protocol):
    """What the store gauges read: an Engine, or the service (which has the same parts)."""

    store: "Store"
    indexer: "Indexer"


class Measured(Parts, Protocol):
    """What `exposition` reads: the parts and their Metrics (the service has both)."""

    metrics: "Metrics"


SERIES = ("calls", "errors", "latency", "hook_latency")  # made with the registry


class Metrics:
    """One service's Prometheus registry (never the global one) and its tool-call timer. The
    registry and its series are made when first used (a tool call, a hook call, a scrape):
    a command that counts nothing (`status`, `search`) never imports prometheus_client."""

    def __init__(self, engine: "Engine"):
        self._engine = engine
        self._tools: set[str] = set()
        self._registry: Optional["CollectorRegistry"] = None
        self._making = threading.Lock()
        monitor_hooks(engine.pm)

    @property
    def registry(self) -> "CollectorRegistry":
        with self._making:
            if self._registry is None:
                self._registry = self._made()
            return self._registry

    def _made(self) -> "CollectorRegistry":
        from prometheus_client import CollectorRegistry, Counter, Histogram

        registry = CollectorRegistry()
        self.calls = Counter("cmms_tool_calls", "Tool calls, by door (mcp, hermes) and tool.",
                             ["door", "tool"], registry=registry)
        self.errors = Counter("cmms_tool_errors", "Tool calls that failed, by door and tool.",
                              ["door", "tool"], registry=registry)
        self.latency = Histogram("cmms_tool_latency_seconds", "Tool call latency, by door and tool.",
                                 ["door", "tool"], buckets=LATENCY_BUCKETS, registry=registry)
        self.hook_latency = Histogram("cmms_hook_latency_seconds", "Plugin hook call latency, by hook.",
                                      ["hook"], buckets=LATENCY_BUCKETS, registry=registry)
        registry.register(StoreGauges(self._engine))
        return registry

    def __getattr__(self, name: str):  # a series, before the registry is made: make it
        if name not in SERIES:
            raise AttributeError(name)
        self.registry  # (made now: it sets the series)
        return self.__dict__[name]

    def _tool(self, tool) -> str:
        """The tool's label: its name, "other" past MAX_TOOL_LABELS names (any caller can
        send any name to the Hermes door), "unknown" when it is not a string."""
        if not isinstance(tool, str):
            return "unknown"
        if tool not in self._tools and len(self._tools) >= MAX_TOOL_LABELS:
            return "other"
        self._tools.add(tool)
        return tool

    @contextmanager
    def tool_call(self, door: str, tool: str, scope: Optional[str] = None) -> Iterator[ToolCall]:
        """Count, time and trace one tool call (span "cmms.tool <tool>"); an exception or
        `fail()` counts it as an error."""
        labels = (door, self._tool(tool))
        call = ToolCall(Span(f"cmms.tool {tool}", door=door, tool=tool, scope=scope))
        started = time.perf_counter()
        failure = None
        try:
            yield call
        except Exception as exc:
            failure = exc
            call.fail(f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self.calls.labels(*labels).inc()
            self.latency.labels(*labels).observe(time.perf_counter() - started)
            if call.error is not None:
                self.errors.labels(*labels).inc()
            call.span.end(call.error, failure)


class StoreGauges:
    """Gauges read from the store and the vector index when scraped: of the whole store, or
    of one scope (then without the last full audit's findings, which are the whole store's)."""

    def __init__(self, parts: Parts, scope: Optional[str] = None):
        self._parts = weakref.ref(parts)
        self._scope = scope

    def collect(self):
        parts = self._parts()
        if parts is None:
            return
        try:
            yield from self._store(parts)
            if self._scope is None:
                yield from self._audit(parts)
        except Exception as exc:  # noqa: BLE001 - a scrape reports what it can
            log.warning("hermes-cmms: store gauges unavailable: %s", exc)

    def _store(self, parts: Parts):
        from prometheus_client.core import GaugeMetricFamily

        gone, by_state, pending, oldest = gauges.counts(parts.store, self._scope)  # forgetting: reads as empty
        memories = GaugeMetricFamily("cmms_memories", "Memories stored, by tier and lifecycle state.",
                                     labels=["tier", "state"])
        for tier, state, count in by_state:
            memories.add_metric([tier, state], count)
        yield memories
        yield GaugeMetricFamily("cmms_index_lag", "Outbox rows waiting for the vector index.", value=pending)
        yield GaugeMetricFamily("cmms_index_lag_seconds", "Age of the oldest outbox row (0 when none).",
                                value=max(0.0, time.time() - oldest) if oldest is not None else 0.0)
        vectors = parts.indexer.vectors
        if vectors is not None:  # absent while the index loads, or without one (keyword-only)
            yield GaugeMetricFamily("cmms_vectors", "Vectors in the index (content view).",
                                    value=0 if gone else vectors.count(self._scope))

    def _audit(self, parts: Parts):
        """The findings of the last full audit (type all, every scope), by any process: it
        leaves an 'audit' event on the audit trail."""
        from prometheus_client.core import GaugeMetricFamily

        last = gauges.last_full_audit(parts.store)
        counts = json.loads(last[1]).get("counts", {}) if last else {}
        drift = GaugeMetricFamily("cmms_drift", "Findings of the last full audit (all types, every scope), "
                                  "by type.", labels=["type"])
        for audit_type in AUDIT_TYPES:
            drift.add_metric([audit_type], counts.get(audit_type, 0))
        yield drift
        yield GaugeMetricFamily("cmms_audit_last_run_timestamp",
                                "When the last full audit ran (Unix time; 0: never).",
                                value=last[0] if last else 0.0)


def exposition(service: Measured, scope: Optional[str] = None) -> str:
    """The service's metrics in the Prometheus text format. With `scope` (a door bound to one
    scope, such as an MCP bridge) the store gauges count that scope only, and the series that
    describe every scope (the last full audit, hook latencies: the scheduler works for all
    scopes) are left out; the tool calls are this process's own."""
    from prometheus_client import CollectorRegistry, generate_latest

    if scope is None:
        return generate_latest(service.metrics.registry).decode("utf-8")
    metrics, registry = service.metrics, CollectorRegistry()
    for own in (metrics.calls, metrics.errors, metrics.latency):
        registry.register(own)
    registry.register(StoreGauges(service, clean_key(scope)))
    return generate_latest(registry).decode("utf-8")
