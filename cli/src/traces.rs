//! Traces for the commands that run calls (`call`, `serve`): spans exported
//! over OTLP/HTTP (protobuf) to the collector the standard OpenTelemetry
//! variables name, or `--otlp-endpoint`.
//!
//! On only when an endpoint is set (`--otlp-endpoint`,
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`)
//! and neither `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`;
//! off, no tracer exists and a call pays nothing. The SDK's batch processor
//! exports from its own thread: a call only queues its span (dropped when
//! the queue is full), so a slow or absent collector never holds or fails a
//! call. `OTEL_SERVICE_NAME` (default `plughost`), `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_BSP_*`
//! and `OTEL_TRACES_SAMPLER` apply as the SDK reads them.

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use plughost::PluginHostBuilder;

use super::otlp_client::OtlpClient;

/// How long the last spans may take to leave when the command ends.
const FLUSH: Duration = Duration::from_secs(5);

/// The command's tracer provider; dropping it sends the spans still queued.
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// The tracer provider the environment (and `--otlp-endpoint`) asks for,
    /// exporting with the client that runs on `runtime`; `None` when traces
    /// are off.
    pub fn from_env(
        endpoint: Option<&str>,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Option<Traces>, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
        let configured = endpoint.is_some()
            || var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
            || var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
        if disabled || !configured {
            return Ok(None);
        }
        for name in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if let Some(p) = var(name).filter(|p| p != "http/protobuf") {
                return Err(format!(
                    "{name}={p}: plughost exports traces over http/protobuf only (point it at the collector's OTLP/HTTP port, 4318 by default)"
                ));
            }
        }
        let timeout = [
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ]
        .iter()
        .find_map(|name| var(name)?.parse::<u64>().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis);
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(OtlpClient::new(runtime.clone(), timeout));
        if let Some(base) = endpoint {
            // Like OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL.
            exporter = exporter.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
        }
        let exporter = exporter
            .build()
            .map_err(|e| format!("cannot set up the OTLP trace exporter: {e}"))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource())
            .build();
        Ok(Some(Traces { provider }))
    }

    /// Gives `builder` this provider's tracer.
    pub fn apply(traces: Option<&Traces>, builder: PluginHostBuilder) -> PluginHostBuilder {
        match traces {
            Some(t) => builder.tracer_provider(&t.provider),
            None => builder,
        }
    }
}

impl Drop for Traces {
    fn drop(&mut self) {
        // The spans still queued go now, within a bound; the exporter's
        // requests run on the command's runtime, which is still there.
        let _ = self.provider.shutdown_with_timeout(FLUSH);
    }
}

/// The resource the environment describes, named `plughost` unless it
/// names itself (`OTEL_SERVICE_NAME`, or `service.name` in
/// `OTEL_RESOURCE_ATTRIBUTES`).
fn resource() -> Resource {
    let detected = Resource::builder().build();
    let named = detected
        .get(&"service.name".into())
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    let builder = if named {
        Resource::builder()
    } else {
        Resource::builder().with_service_name("plughost")
    };
    builder
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build()
}
