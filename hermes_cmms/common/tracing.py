"""OpenTelemetry spans of hermes_cmms, made only when the application has set an SDK tracer
provider. The plugin host and the metrics both trace through here. See docs/health.md."""
from __future__ import annotations

import threading
from typing import Optional

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, Status, StatusCode

TRACER_NAME = "hermes_cmms"
_ATTRIBUTE_TYPES = (str, bool, int, float)

_tracer_lock = threading.Lock()
_tracer_cache: tuple = (None, None)  # (provider, its hermes_cmms tracer)


def tracer() -> Optional[trace.Tracer]:
    """The hermes_cmms tracer of the provider set now (looked up on every call, so a provider
    the application sets later is honoured), or None when no SDK provider is set: then no
    span is made at all."""
    global _tracer_cache
    provider = trace.get_tracer_provider()
    if isinstance(provider, (ProxyTracerProvider, NoOpTracerProvider)):
        return None
    if _tracer_cache[0] is not provider:
        with _tracer_lock:
            _tracer_cache = (provider, trace.get_tracer(TRACER_NAME, tracer_provider=provider))
    return _tracer_cache[1]


class Span:
    """A span, current until `end`; a no-op without an SDK tracer provider."""

    def __init__(self, name: str, **attributes):
        current = tracer()
        self.span = self.token = None
        if current is not None:
            self.span = current.start_span(name, attributes={
                k: v for k, v in attributes.items() if isinstance(v, _ATTRIBUTE_TYPES)})
            self.token = otel_context.attach(trace.set_span_in_context(self.span))

    def end(self, error: Optional[str] = None, exception: Optional[BaseException] = None) -> None:
        if self.span is None:
            return
        otel_context.detach(self.token)
        self.span.set_attribute("ok", error is None)
        if error is not None:
            self.span.set_attribute("error", error[:300])
            self.span.set_status(Status(StatusCode.ERROR, error[:300]))
        if exception is not None:
            self.span.record_exception(exception)
        self.span.end()
