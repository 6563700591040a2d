//! `inspect_request` (hover, Shift+Tab): the documentation of the name under the cursor.

use super::Shell;
use crate::engine::Evaluator;
use crate::syntax;
use jupyter_protocol::{
    InspectReply, InspectRequest, JupyterMessage, Media, MediaType, ReplyStatus, Status,
};

impl<E: Evaluator> Shell<E> {
    /// Answers, then publishes `idle`, from a task of its own: the first hover waits for
    /// rust-analyzer to load (seconds), and JupyterLab asks for the highlighted item's
    /// documentation after every completion reply, so the requests behind it (the next Tab,
    /// with its one-second limit) must not wait for it. Only the engine's part (shaping the
    /// cell) runs in the shell loop, which owns the engine.
    pub(super) async fn inspect_request(
        &mut self,
        message: &JupyterMessage,
        request: &InspectRequest,
    ) {
        let code = &request.code;
        let position = syntax::code_point_to_byte(code, request.cursor_pos);
        let end = syntax::end_of_identifier(code, position);
        // Text the parsers are not given (`syntax::MAX_NESTING`) has no documentation to show.
        if syntax::too_deeply_nested(code).is_some() {
            self.reply(inspect_reply(None).as_child_of(message));
            self.shared.status(message, Status::idle());
            return;
        }
        // The index's documentation, at once, where it holds the name.
        if let Some(found) = self.indexed_documentation(code, end).await {
            self.reply(inspect_reply(Some(found)).as_child_of(message));
            self.shared.status(message, Status::idle());
            return;
        }
        let source = self.engine.prepare_hover(code.clone(), end).await;
        let completer = self.completer.clone();
        let shared = self.shared.clone();
        let outgoing = self.shell.outgoing.clone();
        let message = message.clone();
        tokio::spawn(async move {
            let found = match source {
                Some(source) => completer.inspect(source).await,
                None => None,
            };
            let _ = outgoing.send(inspect_reply(found).as_child_of(&message));
            shared.status(&message, Status::idle());
        });
    }

    /// `(plain text, html)` documentation of the name ending at byte `position` of `code`: the
    /// index's, else rust-analyzer's.
    pub(super) async fn documentation(
        &mut self,
        code: String,
        position: usize,
    ) -> Option<(String, String)> {
        if let Some(found) = self.indexed_documentation(&code, position).await {
            return Some(found);
        }
        let source = self.engine.prepare_hover(code, position).await?;
        self.completer.inspect(source).await
    }

    /// The index's documentation of the name ending at byte `position` of `code`, given the
    /// notebook's variables and items as the engine shapes them for a completion there.
    async fn indexed_documentation(
        &mut self,
        code: &str,
        position: usize,
    ) -> Option<(String, String)> {
        let prepare = self.engine.prepare_completion(code.to_owned(), position);
        self.completer.documentation(code, position, prepare).await
    }
}

fn inspect_reply(found: Option<(String, String)>) -> InspectReply {
    let data = match &found {
        Some((plain, html)) => Media::new(vec![
            MediaType::Plain(plain.clone()),
            MediaType::Html(html.clone()),
        ]),
        None => Media::default(),
    };
    InspectReply {
        found: found.is_some(),
        data,
        metadata: serde_json::Map::new(),
        status: ReplyStatus::Ok,
        error: None,
    }
}
