//! `is_complete_request`: whether the console should run the code or ask for another line.

use crate::syntax::{self, Completeness};
use jupyter_protocol::{IsCompleteReply, IsCompleteReplyStatus, IsCompleteRequest};

pub(super) fn is_complete_request(request: &IsCompleteRequest) -> IsCompleteReply {
    match syntax::is_complete(&request.code) {
        Completeness::Complete => {
            IsCompleteReply::new(IsCompleteReplyStatus::Complete, String::new())
        }
        Completeness::Incomplete(indent) => {
            IsCompleteReply::new(IsCompleteReplyStatus::Incomplete, indent)
        }
        Completeness::Invalid => {
            IsCompleteReply::new(IsCompleteReplyStatus::Invalid, String::new())
        }
    }
}
