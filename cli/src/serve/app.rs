//! Every HTTP route of snapwake in one process: the same handler code the Lambda functions run,
//! dispatched by route.

use lambda_http::{Body, Request, Response};
use snapwake::agentkit::AgentKit;
use snapwake::http::request::{self as req, Route};
use snapwake::store::AgentStore;
use snapwake_resume::Resume;

/// Which function serves a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Function {
    Resume,
}

const ROUTES: [(Route, Function); 1] = [(
    Route {
        method: "POST",
        pattern: "/v1/agents/{kind}/{agent_id}/resume",
    },
    Function::Resume,
)];

/// The functions, each with its own context over the shared store and AgentKit.
pub struct App<S, K> {
    pub resume: Resume<S, K>,
}

impl<S: AgentStore, K: AgentKit> App<S, K> {
    pub async fn handle(&self, request: Request) -> Response<Body> {
        let routes: Vec<Route> = ROUTES.iter().map(|(r, _)| *r).collect();
        let matched = match req::route(&routes, request.method().as_str(), req::path(&request)) {
            Ok(m) => m,
            Err(e) => return e.into_response(req::request_id(&request).as_deref()),
        };
        let function = ROUTES
            .iter()
            .find(|(r, _)| {
                r.pattern == matched.pattern
                    && r.method.eq_ignore_ascii_case(request.method().as_str())
            })
            .map(|(_, f)| *f);
        match function {
            Some(Function::Resume) => self.resume.handle(request).await,
            None => {
                snapwake::Error::RouteNotFound.into_response(req::request_id(&request).as_deref())
            }
        }
    }
}
