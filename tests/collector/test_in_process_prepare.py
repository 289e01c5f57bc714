"""The in-process collector prepares each drained batch at once: SDK spans read exactly, every span redacted as the
full path would (a secret in a batch that otherwise takes the fast path included), and a span that cannot be
redacted left out and counted while the rest of its run is stored."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode

import toolpath
from toolpath.collector import in_process
from toolpath.redact import Redactor
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store


class _Kept(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def _read_through_public_api(span: ReadableSpan) -> SpanRecord:
    """What a span reads as through the SDK's public properties only."""

    def plain(attributes: object) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dict(attributes or {}).items()}  # type: ignore[call-overload]

    return SpanRecord(
        trace_id=f"{span.context.trace_id:032x}",
        span_id=f"{span.context.span_id:016x}",
        parent_span_id=f"{span.parent.span_id:016x}" if span.parent is not None else None,
        name=span.name,
        kind=span.kind.value + 1,
        start_time=span.start_time or 0,
        end_time=span.end_time,
        status_code={"UNSET": 0, "OK": 1, "ERROR": 2}[span.status.status_code.name],
        status_message=span.status.description,
        attributes=plain(span.attributes),
        events=[
            {"name": e.name, "time_unix_nano": e.timestamp, "attributes": plain(e.attributes)} for e in span.events
        ],
        resource=plain(span.resource.attributes),
        scope=span.instrumentation_scope.name if span.instrumentation_scope is not None else None,
    )


def test_sdk_spans_read_as_their_public_properties_say():
    kept = _Kept()
    provider = TracerProvider()
    provider.add_span_processor(kept)
    tracer = provider.get_tracer("reader-test")
    with tracer.start_as_current_span("outer", kind=SpanKind.SERVER, attributes={"tags": ("a", "b"), "n": 3}):
        with tracer.start_as_current_span("inner", kind=SpanKind.CLIENT) as inner:
            inner.set_attribute("flags", [True, False])
            inner.add_event("retry", {"attempt": 2, "codes": (500, 503)})
            inner.set_status(Status(StatusCode.ERROR, "upstream failed"))
        with tracer.start_as_current_span("ok") as ok:
            ok.set_status(Status(StatusCode.OK))
    assert len(kept.spans) == 3
    for span in kept.spans:
        assert in_process.record_from_readable(span) == _read_through_public_api(span)
    # the SDK's own attribute dict is what is read (not the slow proxy): a change there would show here
    assert in_process._attributes_of(kept.spans[0]) is kept.spans[0]._attributes._dict  # type: ignore[attr-defined]


@toolpath.agent(name="clerk")
def clerk(prompt: str) -> str:
    tracer = trace.get_tracer("crm-client")
    for n in range(3):
        with tracer.start_as_current_span(f"GET /customers/{n}", attributes={"http.method": "GET", "row": n}):
            pass
    with tracer.start_as_current_span(
        "POST /notes", attributes={"note": "mail jane.doe@example.com, key sk-abcdefghijklmnopqrstuvwx", "row": 9}
    ):
        pass
    return "noted"


def test_a_secret_in_a_batch_of_plain_spans_is_redacted_as_the_full_path_does(tracing, store_url):
    clerk("note it", session_id="s-prep")
    assert toolpath.flush()
    collector = tracing.collector
    assert collector._preparer.fast >= 4  # the plain spans of the batch took the fast path
    [inv] = Store(store_url).get_session("s-prep").invocations  # type: ignore[union-attr]
    spans = {s.name: s for s in Store(store_url).spans_of_trace(inv.trace_id)}
    note = spans["POST /notes"].attributes["note"]
    assert "jane.doe@example.com" not in note and "sk-abcdefghijklmnopqrstuvwx" not in note
    expected = Redactor.build().attributes({"note": "mail jane.doe@example.com, key sk-abcdefghijklmnopqrstuvwx"})
    assert note == expected["note"]
    assert spans["GET /customers/1"].attributes == {"http.method": "GET", "row": 1}
    assert toolpath.stats()["spans_quarantined"] == 0


def test_a_span_that_cannot_be_redacted_is_left_out_and_the_rest_stored(tracing, store_url, monkeypatch):
    redactor = tracing.collector.redactor
    assert redactor is not None
    text = redactor.text

    def failing(value: str) -> str:
        if "toxic-marker" in value:
            raise RuntimeError("no rule for this")
        return text(value)

    monkeypatch.setattr(redactor, "text", failing)

    @toolpath.agent(name="poisoned")
    def poisoned(prompt: str) -> str:
        tracer = trace.get_tracer("crm-client")
        with tracer.start_as_current_span("GET /a", attributes={"row": 1}):
            pass
        with tracer.start_as_current_span("GET /b", attributes={"note": "toxic-marker@example.com"}):
            pass
        return "done"

    poisoned("go", session_id="s-quarantine")
    assert not toolpath.flush()  # a lost span is a loss
    assert toolpath.stats()["spans_quarantined"] == 1
    [inv] = Store(store_url).get_session("s-quarantine").invocations  # type: ignore[union-attr]
    names = sorted(s.name for s in Store(store_url).spans_of_trace(inv.trace_id))
    assert "GET /b" not in names and "GET /a" in names and inv.response == "done"
