//! Reading an answer body with a cap. AgentKit's largest answer is a page of 100 sessions or
//! snapshots, tens of KiB; a body past [`MAX_ANSWER_BYTES`] is a misbehaving service or
//! something in between, and reading it whole would let it take the function's memory
//! (docs/security.md, "Bounded reads"). A declared `Content-Length` over the cap is refused
//! before reading; a chunked body is read until it passes the cap.

/// The largest AgentKit answer read: 4 MiB.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Why a body was not read.
#[derive(Debug)]
pub enum Unread {
    /// The body is longer than the cap.
    TooLarge { limit: usize },
    /// The connection failed while reading.
    Transport(reqwest::Error),
}

/// The body of `resp`, at most `limit` bytes.
pub async fn read_bounded(mut resp: reqwest::Response, limit: usize) -> Result<Vec<u8>, Unread> {
    if resp
        .content_length()
        .is_some_and(|declared| declared > limit as u64)
    {
        return Err(Unread::TooLarge { limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(Unread::Transport)? {
        if body.len() + chunk.len() > limit {
            return Err(Unread::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
