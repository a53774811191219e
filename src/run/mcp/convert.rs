//! From rmcp's model to plughost's: a listed tool, and a tool result as the
//! response a stdio-json plugin would have written.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::Value;

use crate::plugins::mcp_tools::ListedTool;
use crate::protocol::{Attachment, MediaType, Response};

/// A tool as the server listed it.
pub(super) fn listed(tool: Tool) -> ListedTool {
    ListedTool {
        name: tool.name.into_owned(),
        description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
        input_schema: (*tool.input_schema).clone(),
        output_schema: tool.output_schema.map(|s| (*s).clone()),
    }
}

/// The response of a tool result: text blocks (and embedded text resources)
/// become the result text, images and audio become attachments with their
/// data, links and blobs file attachments, `structuredContent` `structured`.
pub(super) fn response(r: CallToolResult) -> Response {
    let mut texts = Vec::new();
    let mut attachments = Vec::new();
    for block in r.content {
        match block {
            ContentBlock::Text(t) => texts.push(t.text),
            ContentBlock::Image(i) => {
                attachments.push(media(MediaType::Image, i.mime_type, i.data))
            }
            ContentBlock::Audio(a) => {
                attachments.push(media(MediaType::Audio, a.mime_type, a.data))
            }
            ContentBlock::ResourceLink(l) => attachments.push(Attachment {
                media_type: MediaType::File,
                mime_type: l.mime_type,
                path: None,
                url: Some(l.uri),
                data: None,
                caption: l.description.or(Some(l.name)),
                size: l.size,
            }),
            ContentBlock::Resource(e) => match e.resource {
                ResourceContents::TextResourceContents { text, .. } => texts.push(text),
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => attachments.push(Attachment {
                    media_type: MediaType::File,
                    mime_type,
                    path: None,
                    url: Some(uri),
                    data: Some(blob),
                    caption: None,
                    size: None,
                }),
                _ => {}
            },
            _ => {}
        }
    }
    Response {
        result: Value::String(texts.join("\n")),
        is_error: r.is_error.unwrap_or(false),
        attachments,
        structured: r.structured_content.filter(|v| !v.is_null()),
        error: None,
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
