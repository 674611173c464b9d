//! The simulator without a socket: [`InProcess`] is a `snapwake::agentkit::Transport` that hands
//! each signed request to the simulator's action endpoint in this process, exactly as its HTTP
//! route would (signature checked, rate limits, faults, the action, the envelope), and reads
//! the answer back with the client's own limits.
//!
//! For a simulated deployment (snapwake's `ambient::simulate_from`, a paused tokio clock):
//! every function and the simulator in one process on one clock, where a loopback socket would
//! let the paused clock jump ahead while an answer is on its way. A latency fault is a tokio
//! sleep, so it takes simulated time; an answer that outlasts the request's timeout is lost
//! (the action may have been carried out, as over a real connection).

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use snapwake::agentkit::port::{Answered, NoAnswer, Outgoing, Sending, Transport};

use crate::control::SimControl;
use crate::server;

/// A transport into the simulator of `control`.
#[derive(Clone)]
pub struct InProcess {
    control: SimControl,
}

impl InProcess {
    pub fn new(control: SimControl) -> Self {
        InProcess { control }
    }
}

impl Transport for InProcess {
    fn send(&self, request: Outgoing) -> Sending<'_> {
        Box::pin(async move {
            let mut headers = HeaderMap::new();
            for (name, value) in &request.headers {
                let name = HeaderName::from_bytes(name.as_bytes());
                let value = HeaderValue::from_str(value);
                if let (Ok(name), Ok(value)) = (name, value) {
                    headers.insert(name, value);
                }
            }
            let query = request.url.query().map(str::to_string);
            let answered = server::action(
                State(self.control.clone()),
                headers,
                RawQuery(query),
                Bytes::from(request.body),
            );
            let Ok(response) = tokio::time::timeout(request.timeout, answered).await else {
                return Err(NoAnswer::Lost {
                    detail: "timed out".into(),
                    retry_after: None,
                });
            };
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(std::time::Duration::from_secs);
            match axum::body::to_bytes(response.into_body(), request.limit).await {
                Ok(body) => Ok(Answered {
                    status,
                    retry_after,
                    body: body.to_vec(),
                }),
                Err(_) => Err(NoAnswer::TooLarge {
                    limit: request.limit,
                }),
            }
        })
    }
}
