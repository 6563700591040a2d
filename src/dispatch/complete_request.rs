//! `complete_request`: the engine shapes the cell, the completer answers within JupyterLab's
//! one second; offsets go back in code points.

use super::Shell;
use crate::engine::Evaluator;
use crate::syntax;
use jupyter_protocol::{CompleteReply, CompleteRequest, ReplyStatus};

impl<E: Evaluator> Shell<E> {
    pub(super) async fn complete_request(&mut self, request: &CompleteRequest) -> CompleteReply {
        let code = &request.code;
        let position = syntax::code_point_to_byte(code, request.cursor_pos);
        if syntax::too_deeply_nested(code).is_some() {
            // Nothing is offered for text the parsers are not given (`syntax::MAX_NESTING`).
            let cursor = request.cursor_pos;
            return CompleteReply {
                matches: Vec::new(),
                cursor_start: cursor,
                cursor_end: cursor,
                metadata: serde_json::Map::new(),
                status: ReplyStatus::Ok,
                error: None,
            };
        }
        let prepare = self.engine.prepare_completion(code.clone(), position);
        let found = self.completer.complete(code, position, prepare).await;
        let (start, end) = if found.matches.is_empty() {
            (position, position)
        } else {
            (found.start.min(code.len()), found.end.min(code.len()))
        };
        let cursor_start = syntax::byte_to_code_point(code, start);
        let cursor_end = syntax::byte_to_code_point(code, end);
        // JupyterLab shows an icon per kind from this (ipykernel's key, experimental there too).
        let types: Vec<serde_json::Value> = found
            .matches
            .iter()
            .map(|m| {
                serde_json::json!({
                    "start": cursor_start, "end": cursor_end, "text": m.text, "type": m.kind,
                })
            })
            .collect();
        let mut metadata = serde_json::Map::new();
        metadata.insert("_jupyter_types_experimental".into(), types.into());
        CompleteReply {
            matches: found.matches.into_iter().map(|m| m.text).collect(),
            cursor_start,
            cursor_end,
            metadata,
            status: ReplyStatus::Ok,
            error: None,
        }
    }
}
