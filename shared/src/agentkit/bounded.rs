//! Reading an answer body with a cap (docs/security.md, "Bounded reads"). AgentKit's largest
//! answer is tens of KiB: a bigger body is a misbehaving peer that must not take our memory.

pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Why a body was not read.
#[derive(Debug)]
pub enum Unread {
    TooLarge { limit: usize },
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
