//! `?name` in a cell: the documentation of `name` as a pager payload, as IPython answers `?`.

use crate::dispatch::Shell;
use crate::engine::Evaluator;
use jupyter_protocol::{
    ExecuteReply, ExecuteRequest, ExecutionCount, JupyterMessage, Media, MediaType, Payload,
    ReplyStatus,
};
use std::collections::HashMap;

impl<E: Evaluator> Shell<E> {
    pub(super) async fn page_help(
        &mut self,
        message: &JupyterMessage,
        request: &ExecuteRequest,
        name: String,
        count: ExecutionCount,
    ) {
        let found = self.documentation(name.clone(), name.len()).await;
        let (plain, html) = found.unwrap_or_else(|| {
            let text = format!("No documentation found for `{name}`.");
            (text.clone(), text)
        });
        let reply = ExecuteReply {
            status: ReplyStatus::Ok,
            execution_count: count,
            payload: vec![Payload::Page {
                data: Media::new(vec![MediaType::Plain(plain), MediaType::Html(html)]),
                start: 0,
            }],
            user_expressions: request.user_expressions.as_ref().map(|_| HashMap::new()),
            error: None,
        };
        self.reply(reply.as_child_of(message));
    }
}
