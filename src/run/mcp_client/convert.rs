//! From rmcp's model to plughost's: a listed tool, and a tool result as the
//! response a stdio-json plugin would have written, with the server's
//! content blocks kept whole beside it.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::{Map, Value};

use crate::plugins::mcp_listing::ListedTool;
use crate::protocol::{Attachment, MediaType, Response};

/// A tool as the server listed it: every field kept.
pub(super) fn listed(tool: Tool) -> ListedTool {
    let mut extra: Map<String, Value> = match serde_json::to_value(&tool) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    for known in ["name", "description", "inputSchema", "outputSchema"] {
        extra.remove(known);
    }
    ListedTool {
        name: tool.name.into_owned(),
        description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
        input_schema: (*tool.input_schema).clone(),
        output_schema: tool.output_schema.map(|s| (*s).clone()),
        extra,
    }
}

/// The response of a tool result, and the result's content blocks and
/// `_meta` as the server sent them. The response is for front ends that are
/// not MCP (the CLI, the library's `result` text): text blocks (and embedded
/// text resources) become the result text; images and audio attachments
/// with their data; links and blobs file attachments; `structuredContent`
/// `structured`.
pub(crate) fn response(r: CallToolResult) -> (Response, Vec<Value>, Option<Value>) {
    let raw: Vec<Value> = r
        .content
        .iter()
        .filter_map(|c| serde_json::to_value(c).ok())
        .collect();
    let meta = r
        .meta
        .as_ref()
        .and_then(|m| serde_json::to_value(m).ok())
        .filter(|m| m.as_object().is_some_and(|o| !o.is_empty()));
    let mut texts = Vec::new();
    let mut attachments = Vec::new();
    for block in r.content {
        match block_of(block) {
            Piece::Text(t) => texts.push(t),
            Piece::Attachment(a) => attachments.push(a),
            Piece::None => {}
        }
    }
    let response = Response {
        result: Value::String(texts.join("\n")),
        is_error: r.is_error.unwrap_or(false),
        attachments,
        structured: r.structured_content.filter(|v| !v.is_null()),
        error: None,
    };
    (response, raw, meta)
}

enum Piece {
    Text(String),
    Attachment(Attachment),
    None,
}

fn block_of(block: ContentBlock) -> Piece {
    match block {
        ContentBlock::Text(t) => Piece::Text(t.text),
        ContentBlock::Image(i) => Piece::Attachment(media(MediaType::Image, i.mime_type, i.data)),
        ContentBlock::Audio(a) => Piece::Attachment(media(MediaType::Audio, a.mime_type, a.data)),
        ContentBlock::ResourceLink(l) => Piece::Attachment(Attachment {
            media_type: MediaType::File,
            mime_type: l.mime_type,
            path: None,
            url: Some(l.uri),
            data: None,
            caption: l.description.or(Some(l.name)),
            size: l.size,
        }),
        ContentBlock::Resource(e) => match e.resource {
            ResourceContents::TextResourceContents { text, .. } => Piece::Text(text),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Piece::Attachment(Attachment {
                media_type: MediaType::File,
                mime_type,
                path: None,
                url: Some(uri),
                data: Some(blob),
                caption: None,
                size: None,
            }),
            #[allow(
                unreachable_patterns,
                reason = "rmcp's content enums are non-exhaustive in some versions"
            )]
            _ => Piece::None,
        },
        #[allow(
            unreachable_patterns,
            reason = "rmcp's content enums are non-exhaustive in some versions"
        )]
        _ => Piece::None,
    }
}

fn media(media_type: MediaType, mime_type: String, data: String) -> Attachment {
    Attachment {
        media_type,
        mime_type: Some(mime_type),
        path: None,
        url: None,
        data: Some(data),
        caption: None,
        size: None,
    }
}
