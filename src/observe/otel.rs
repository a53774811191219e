//! Spans of calls, made with the OpenTelemetry API (feature `otel`): one per
//! call, the child of the caller's W3C trace context, with a child for what
//! was started for the call (a process, a worker, an MCP server) and one for
//! the approval question. The host makes them with the tracer of the provider
//! it was given ([`crate::PluginHostBuilder::tracer_provider`]), so an
//! embedder's spans and plughost's land in one trace, exported however the
//! embedder exports them.
//!
//! The child spans are recorded when the call ends, from the times the
//! pipeline measured ([`Phases`]): no span travels through the executor, and
//! a host without a tracer pays nothing.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{
    Span, SpanBuilder, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId,
    TraceState, Tracer, TracerProvider,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};

use super::phases::{Phases, Start, Step};
use super::{CallInfo, CallSummary};
use crate::plugins::catalog::Plugin;
use crate::plugins::manifest::Protocol;
use crate::protocol::{Source, TraceContext};

/// The tracer a host makes its spans with.
#[derive(Clone)]
pub(crate) struct Tracing(Arc<BoxedTracer>);

impl std::fmt::Debug for Tracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tracing")
    }
}

impl Tracing {
    /// The tracer `provider` gives the instrumentation scope `plughost`.
    pub(crate) fn new<P>(provider: &P) -> Tracing
    where
        P: TracerProvider,
        P::Tracer: Send + Sync + 'static,
        <P::Tracer as Tracer>::Span: Send + Sync + 'static,
    {
        let scope = InstrumentationScope::builder("plughost")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        Tracing(Arc::new(BoxedTracer::new(Box::new(
            provider.tracer_with_scope(scope),
        ))))
    }

    /// Starts the span of a call of `plugin`'s tool (`None`: no such tool).
    pub(crate) fn start(&self, call: &CallInfo, plugin: Option<&Plugin>) -> CallSpan {
        let parent = call
            .invocation
            .trace
            .as_ref()
            .and_then(remote)
            .map(|sc| Context::new().with_remote_span_context(sc))
            .unwrap_or_default();
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", clip(&call.tool)),
        ];
        let invocation = &call.invocation;
        if let Some(id) = &invocation.request_id {
            attributes.push(KeyValue::new("gen_ai.tool.call.id", clip(id)));
        }
        if let Some(session) = &invocation.session_id {
            attributes.push(KeyValue::new("mcp.session.id", clip(session)));
        }
        if let Some(source) = invocation.source {
            attributes.push(KeyValue::new("plughost.call.source", source_name(source)));
        }
        if let Some(p) = plugin {
            attributes.extend([
                KeyValue::new("plughost.plugin.name", p.name().to_owned()),
                KeyValue::new("plughost.plugin.version", p.manifest.version.to_string()),
                KeyValue::new(
                    "plughost.plugin.protocol",
                    match p.manifest.protocol {
                        Protocol::Mcp => "mcp",
                        _ => "stdio-json",
                    },
                ),
                KeyValue::new(
                    "plughost.plugin.persistent",
                    p.manifest.worker_settings().is_some(),
                ),
            ]);
        }
        let name: Cow<'static, str> = match plugin {
            Some(_) => format!("execute_tool {}", call.tool).into(),
            // The name came from the client and names nothing.
            None => "execute_tool".into(),
        };
        let kind = match invocation.source {
            Some(Source::Mcp) => SpanKind::Server,
            _ => SpanKind::Internal,
        };
        let span = self.0.build_with_context(
            SpanBuilder::from_name(name)
                .with_kind(kind)
                .with_attributes(attributes),
            &parent,
        );
        let cx = parent.with_span(span);
        let sc = cx.span().span_context().clone();
        let context = if sc.is_valid() {
            Some(header(&sc))
        } else {
            // A provider that records nothing: the caller's trace goes on.
            call.invocation.trace.clone()
        };
        CallSpan {
            tracer: self.0.clone(),
            cx,
            context,
            at: (SystemTime::now(), Instant::now()),
        }
    }
}

/// The span of one call in flight.
pub(crate) struct CallSpan {
    tracer: Arc<BoxedTracer>,
    /// The caller's context with this span in it.
    cx: Context,
    /// What the plugin continues: this span, as W3C headers.
    context: Option<TraceContext>,
    /// When the span started, on both clocks, to date the child spans.
    at: (SystemTime, Instant),
}

impl CallSpan {
    /// The trace context the plugin continues.
    pub(crate) fn context(&self) -> Option<&TraceContext> {
        self.context.as_ref()
    }

    /// Records the child spans and the outcome, and ends the span.
    pub(crate) fn end(self, phases: &Phases, summary: &CallSummary, error: Option<String>) {
        if let Some((what, step)) = phases.start {
            let (name, extra) = match what {
                Start::Process => ("plughost.spawn", None),
                Start::Worker => ("plughost.worker.start", None),
                Start::Server => (
                    "plughost.worker.start",
                    Some(KeyValue::new("plughost.worker.protocol", "mcp")),
                ),
            };
            self.child(name, &step, extra.into_iter().collect());
        }
        if let Some(step) = &phases.approval {
            let answer = if step.ok { "granted" } else { "declined" };
            let mut step = *step;
            step.ok = true;
            self.child(
                "plughost.approval",
                &step,
                vec![KeyValue::new("plughost.approval.answer", answer)],
            );
        }
        let span = self.cx.span();
        let outcome = summary.outcome();
        let mut attributes = vec![
            KeyValue::new("plughost.call.outcome", outcome),
            KeyValue::new("plughost.call.bytes_in", summary.bytes_in as i64),
            KeyValue::new("plughost.call.bytes_out", summary.bytes_out as i64),
            KeyValue::new("plughost.call.wait_ms", ms(summary.wait)),
        ];
        if let Some(run) = summary.run {
            attributes.push(KeyValue::new("plughost.call.run_ms", ms(run)));
        }
        if let Some(level) = summary.sandbox {
            attributes.push(KeyValue::new("plughost.sandbox", level.as_str()));
        }
        if let Some(pid) = summary.worker {
            attributes.push(KeyValue::new("plughost.worker.pid", i64::from(pid)));
        }
        if let Some(code) = summary.exit_code {
            attributes.push(KeyValue::new("process.exit.code", i64::from(code)));
        }
        if let Some(kind) = summary.tool_error {
            attributes.push(KeyValue::new("plughost.tool.error_kind", kind.as_str()));
        }
        if !summary.refused.is_empty() {
            // What the egress proxy refused the plugin while the call ran.
            let refused: Vec<opentelemetry::StringValue> =
                summary.refused.iter().map(|r| r.clone().into()).collect();
            attributes.push(KeyValue::new(
                "plughost.egress.refused",
                opentelemetry::Value::Array(opentelemetry::Array::String(refused)),
            ));
        }
        if !summary.brokered.is_empty() {
            // Which brokered secret went on which request, never its value.
            let brokered: Vec<opentelemetry::StringValue> =
                summary.brokered.iter().map(|r| r.clone().into()).collect();
            attributes.push(KeyValue::new(
                "plughost.egress.brokered",
                opentelemetry::Value::Array(opentelemetry::Array::String(brokered)),
            ));
        }
        if outcome != "ok" {
            attributes.push(KeyValue::new("error.type", outcome));
        }
        span.set_attributes(attributes);
        match (error, summary.is_error) {
            (Some(message), _) => span.set_status(Status::error(clip(&message))),
            (None, true) => span.set_status(Status::error("the tool reported an error")),
            (None, false) => {}
        }
        span.end();
    }

    /// A finished child span of this call.
    fn child(&self, name: &'static str, step: &Step, attributes: Vec<KeyValue>) {
        let mut span = self.tracer.build_with_context(
            SpanBuilder::from_name(name)
                .with_start_time(self.clock(step.start))
                .with_attributes(attributes),
            &self.cx,
        );
        if !step.ok {
            span.set_status(Status::error("failed"));
        }
        span.end_with_timestamp(self.clock(step.end));
    }

    /// `instant` on the wall clock.
    fn clock(&self, instant: Instant) -> SystemTime {
        let (wall, mono) = self.at;
        match instant.checked_duration_since(mono) {
            Some(after) => wall + after,
            None => wall - mono.duration_since(instant),
        }
    }
}

/// The remote span a W3C context names.
fn remote(c: &TraceContext) -> Option<SpanContext> {
    let mut parts = c.traceparent.split('-').skip(1);
    let trace = TraceId::from_hex(parts.next()?).ok()?;
    let span = SpanId::from_hex(parts.next()?).ok()?;
    let flags = u8::from_str_radix(parts.next()?, 16).ok()?;
    let state = c
        .tracestate
        .as_deref()
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    let sc = SpanContext::new(trace, span, TraceFlags::new(flags), true, state);
    sc.is_valid().then_some(sc)
}

/// A span's context as the W3C headers.
fn header(sc: &SpanContext) -> TraceContext {
    let state = sc.trace_state().header();
    TraceContext {
        traceparent: format!(
            "00-{:032x}-{:016x}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8() & 1
        ),
        tracestate: (!state.is_empty()).then_some(state),
    }
}

fn source_name(source: Source) -> &'static str {
    match source {
        Source::Cli => "cli",
        Source::Mcp => "mcp",
        Source::Library => "library",
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// At most 256 bytes of a string that came from outside.
fn clip(s: &str) -> String {
    let mut end = s.len().min(256);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w3c_headers_round_trip() {
        let c = TraceContext::parse(
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
        )
        .unwrap();
        let sc = remote(&c).unwrap();
        assert!(sc.is_sampled() && sc.is_remote());
        assert_eq!(header(&sc), c);
    }
}
