//! `history_request`: this session's cells (tail, range, search), from [`History`].

use crate::history::History;
use jupyter_protocol::{HistoryReply, HistoryRequest};

pub(super) fn history_request(history: &History, request: &HistoryRequest) -> HistoryReply {
    HistoryReply::new(history.answer(request))
}
