//! A call's trace: its span when the host traces (feature `otel`, see
//! `otel.rs`), and the W3C trace context its plugin continues: that span, or
//! else the caller's context passed on as it came, so a plugin's own spans
//! join the caller's trace even when plughost records none.

#[cfg(feature = "otel")]
pub(crate) use super::otel::Tracing;

/// Without the `otel` feature a host never has a tracer.
#[cfg(not(feature = "otel"))]
#[derive(Clone, Debug)]
pub(crate) enum Tracing {}

use super::phases::Phases;
use super::{CallInfo, CallSummary};
use crate::plugins::catalog::Plugin;
use crate::protocol::TraceContext;

/// The trace of one call in flight.
pub(crate) struct CallTrace {
    #[cfg(feature = "otel")]
    span: Option<super::otel::CallSpan>,
    /// The caller's context, when there is no span.
    passed_on: Option<TraceContext>,
}

impl CallTrace {
    /// Starts the trace of `call` (of `plugin`'s tool, when there is one):
    /// a span when `tracing` is there.
    pub(crate) fn start(
        tracing: Option<&Tracing>,
        call: &CallInfo,
        plugin: Option<&Plugin>,
    ) -> CallTrace {
        #[cfg(feature = "otel")]
        if let Some(tracing) = tracing {
            return CallTrace {
                span: Some(tracing.start(call, plugin)),
                passed_on: None,
            };
        }
        #[cfg(not(feature = "otel"))]
        let _ = (tracing, plugin);
        CallTrace {
            #[cfg(feature = "otel")]
            span: None,
            passed_on: call.invocation.trace.clone(),
        }
    }

    /// The context the plugin continues.
    pub(crate) fn context(&self) -> Option<&TraceContext> {
        #[cfg(feature = "otel")]
        if let Some(span) = &self.span {
            return span.context();
        }
        self.passed_on.as_ref()
    }

    /// Ends the call's span, if it has one, with how the call went.
    pub(crate) fn end(self, phases: &Phases, summary: &CallSummary, error: Option<String>) {
        #[cfg(feature = "otel")]
        if let Some(span) = self.span {
            span.end(phases, summary, error);
        }
        #[cfg(not(feature = "otel"))]
        let _ = (phases, summary, error);
    }
}
