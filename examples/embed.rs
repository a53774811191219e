//! A small agent loop around plughost, the way an agent host embeds it.
//!
//! The "model" here is a scripted stand-in (no network is needed to run the
//! example): it reads the tool list in the `prompt` export format and answers
//! with `<tool_call>` blocks, exactly what a model without native tool calling
//! is asked to do. Swap `scripted_model` for a real model call.
//!
//! Run: `cargo run --example embed` (uses `plugins-examples/`).

use std::sync::Arc;

use plughost::export::{Format, export, parse_tool_calls};
use plughost::protocol::{Invocation, Scope, Source};
use plughost::{CallOptions, PluginHost};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let state = std::env::temp_dir().join(format!("plughost-embed-{}", std::process::id()));
    let host = PluginHost::builder()
        .plugins_dir("plugins-examples")
        .state_dir(&state)
        .build()?;
    let system_prompt = match export(&host.tools(), Format::Prompt)? {
        Value::String(text) => text,
        _ => unreachable!("the prompt format is text"),
    };
    println!(
        "system prompt: {} tools, {} characters",
        host.tools().len(),
        system_prompt.len()
    );

    let mut transcript = vec![format!(
        "user: greet Ada, then remember that her colour is teal"
    )];
    for turn in 0..4 {
        let reply = scripted_model(&system_prompt, &transcript, turn);
        println!("\nmodel: {reply}");
        let calls = match parse_tool_calls(&reply) {
            Ok(calls) if calls.is_empty() => break, // a final answer
            Ok(calls) => calls,
            Err(reason) => {
                transcript.push(format!("tool error: {reason}"));
                continue;
            }
        };
        for call in calls {
            let options = CallOptions {
                invocation: Invocation {
                    session_id: Some("embed-demo".into()),
                    source: Some(Source::Library),
                    scope: Some(Scope::Foreground),
                    ..Invocation::default()
                },
                on_progress: Some(Arc::new(|p| {
                    eprintln!("  progress: {} {:?}", p.progress, p.message)
                })),
                ..CallOptions::default()
            };
            let text = match host
                .call_with(&call.name, call.arguments.clone(), options)
                .await
            {
                Ok(outcome) if outcome.is_error => {
                    format!("{} reported an error: {}", call.name, outcome.result)
                }
                Ok(outcome) => outcome.result,
                // The error's words are meant for the model: it can fix its input and retry.
                Err(e) => format!("error {}: {e}", e.kind()),
            };
            println!("tool {}: {text}", call.name);
            transcript.push(format!("tool {}: {text}", call.name));
        }
    }
    println!(
        "\ncalls made: {:?}",
        host.metrics().keys().collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&state);
    Ok(())
}

/// Stands in for a model: one scripted step per turn.
fn scripted_model(system_prompt: &str, transcript: &[String], turn: usize) -> String {
    assert!(
        system_prompt.contains("<tool_call>"),
        "the prompt teaches the convention"
    );
    match turn {
        0 => r#"I'll greet her first.
<tool_call>
{"name": "hello_greet", "arguments": {"name": "Ada"}}
</tool_call>"#
            .to_owned(),
        1 => r#"<tool_call>{"name": "kv_set", "arguments": {"key": "ada.colour", "value": "teal"}}</tool_call>"#.to_owned(),
        2 => r#"<tool_call>{"name": "kv_get", "arguments": {"key": "ada.colour"}}</tool_call>"#.to_owned(),
        _ => format!("Done: {}", transcript.last().cloned().unwrap_or_default()),
    }
}
