"""A span exporter that appends each finished span to a file, one JSON object a line
(name, kind, trace and span ids, parent, attributes): how a worker process of
tests/places/test_contrib_celery.py shows the test its spans, with nothing but the OpenTelemetry
SDK and no network.

``install(path)`` puts an SDK ``TracerProvider`` with this exporter (synchronous: a span
is on disk once it ended) on the global provider, and instruments Celery with
``opentelemetry-instrumentation-celery``.
"""

from __future__ import annotations

import json
import threading
from typing import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class FileSpanExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = []
        for span in spans:
            context = span.get_span_context()
            assert context is not None
            lines.append(json.dumps({
                "name": span.name,
                "kind": span.kind.name,
                "trace_id": f"{context.trace_id:032x}",
                "span_id": f"{context.span_id:016x}",
                "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
                "attributes": {k: v if isinstance(v, (str, int, float, bool)) else str(v)
                               for k, v in (span.attributes or {}).items()},
            }))
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def install(path: str) -> None:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(path)))
    trace.set_tracer_provider(provider)
    CeleryInstrumentor().instrument()
