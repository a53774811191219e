//! Turning call results into MCP tool results.
//!
//! An MCP server's result goes on as the server sent it: every content block
//! in order with its annotations, embedded resources and links, its
//! `structuredContent`, `_meta` and `isError`. For other plugins, a plugin's
//! `is_error: true` and every host error become a tool result with
//! `isError: true` (host errors name their kind first, so a model can
//! recover); attachments become image, audio or resource-link content;
//! `structured` becomes `structuredContent`.

use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock, Resource};

use super::remedies::Remedies;
use crate::error::CallError;
use crate::protocol::{Attachment, MediaType};
use crate::run::outcome::ToolOutcome;

/// Largest image or audio file inlined into a result; bigger ones are linked.
const MAX_INLINE_BYTES: u64 = 8 * 1024 * 1024;

/// The `_meta` key of what the sandbox refused during a call.
const DENIALS: &str = "plughost/denials";

/// The MCP result of a call that reached its plugin.
pub(super) fn outcome_result(outcome: &ToolOutcome) -> CallToolResult {
    let mut result = result_of(outcome);
    // What the sandbox refused during the call (a host the server tried and
    // reported as a plain failure), beside the result, never in it; a
    // server's own `plughost/denials` is dropped, never passed on as ours.
    if let Some(meta) = result.meta.as_mut() {
        meta.0.remove(DENIALS);
    }
    if !outcome.denials.is_empty() {
        let said: Vec<String> = outcome.denials.iter().map(ToString::to_string).collect();
        result
            .meta
            .get_or_insert_with(Default::default)
            .0
            .insert(DENIALS.into(), serde_json::json!(said));
    }
    result
}

fn result_of(outcome: &ToolOutcome) -> CallToolResult {
    if !outcome.content.is_empty() || outcome.meta.is_some() {
        return as_sent(outcome);
    }
    // A plugin-reported kind leads the text, as host errors' kinds do.
    let text = match &outcome.error {
        Some(e) if outcome.is_error => format!("error {}: {}", e.kind, outcome.result),
        _ => outcome.result.clone(),
    };
    let mut content = vec![ContentBlock::text(text)];
    content.extend(
        outcome
            .attachments
            .iter()
            .enumerate()
            .map(|(i, a)| attachment_content(a, outcome.opened.get(i).and_then(Option::as_deref))),
    );
    let mut result = if outcome.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = outcome.structured.clone();
    result
}

/// An MCP server's result, as it sent it.
fn as_sent(outcome: &ToolOutcome) -> CallToolResult {
    let content: Vec<ContentBlock> = outcome
        .content
        .iter()
        .filter_map(|c| serde_json::from_value(c.clone()).ok())
        .collect();
    let mut result = if outcome.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = outcome.structured.clone();
    result.meta = outcome
        .meta
        .as_ref()
        .and_then(|m| serde_json::from_value(m.clone()).ok());
    result
}

/// The MCP result of a host error: `isError: true` with the kind and the
/// reason, and when one action fixes it (approving the plugin, say), how.
pub(super) fn error_result(error: &CallError, remedies: &Remedies) -> CallToolResult {
    let remedy = match error.remedy() {
        Some(remedy) => format!("; {}", remedies.after_error(&remedy)),
        None => String::new(),
    };
    CallToolResult::error(vec![ContentBlock::text(format!(
        "error {}: {error}{remedy}",
        error.kind()
    ))])
}

/// An attachment as MCP content. An image or audio file is inlined from
/// `opened`, the descriptor its check opened (never reopened by its path, which
/// the plugin may have pointed elsewhere since); one too large to inline, or
/// another kind, is linked.
fn attachment_content(a: &Attachment, opened: Option<&std::fs::File>) -> ContentBlock {
    let mime = a
        .mime_type
        .clone()
        .unwrap_or_else(|| default_mime(a.media_type).to_owned());
    if let (Some(data), MediaType::Image | MediaType::Audio) = (&a.data, a.media_type) {
        return match a.media_type {
            MediaType::Image => ContentBlock::image(data.clone(), mime),
            _ => ContentBlock::audio(data.clone(), mime),
        };
    }
    if let (Some(file), MediaType::Image | MediaType::Audio) = (opened, a.media_type)
        && let Ok(bytes) = crate::fsat::read_capped(file, MAX_INLINE_BYTES)
    {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        return match a.media_type {
            MediaType::Image => ContentBlock::image(data, mime),
            _ => ContentBlock::audio(data, mime),
        };
    }
    let uri = match (&a.url, &a.path) {
        (Some(url), _) => url.clone(),
        (None, Some(path)) => format!("file://{}", path.display()),
        (None, None) => String::new(),
    };
    let name = a
        .path
        .as_ref()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .or_else(|| a.caption.clone())
        .unwrap_or_else(|| "attachment".to_owned());
    let mut resource = Resource::new(uri, name).with_mime_type(mime);
    if let Some(caption) = &a.caption {
        resource = resource.with_description(caption.clone());
    }
    if let Some(size) = a.size {
        resource = resource.with_size(size);
    }
    ContentBlock::resource_link(resource)
}

fn default_mime(kind: MediaType) -> &'static str {
    match kind {
        MediaType::Image => "image/png",
        MediaType::Audio => "audio/wav",
        MediaType::Video => "video/mp4",
        MediaType::File => "application/octet-stream",
    }
}
