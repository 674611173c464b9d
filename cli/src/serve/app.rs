//! Every HTTP route of snapwake in one process: the same handler code the Lambda functions run,
//! dispatched by each function's own route table.

use lambda_http::{Body, Request, Response};
use snapwake::agentkit::AgentKit;
use snapwake::http::edge;
use snapwake::http::edge::Route;
use snapwake::store::{AgentStore, ScheduleStore, UsageStore};
use snapwake_create::Create;
use snapwake_delete::Delete;
use snapwake_list::List;
use snapwake_resume::Resume;

/// Which function serves a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Function {
    List,
    Create,
    Resume,
    Delete,
}

fn routes() -> Vec<(Route, Function)> {
    let tag =
        |routes: &[Route], f: Function| routes.iter().map(move |r| (*r, f)).collect::<Vec<_>>();
    [
        tag(&snapwake_list::ROUTES, Function::List),
        tag(&snapwake_create::ROUTES, Function::Create),
        tag(&snapwake_resume::ROUTES, Function::Resume),
        tag(&snapwake_delete::ROUTES, Function::Delete),
    ]
    .concat()
}

/// The functions, each with its own context over the shared store and AgentKit.
pub struct App<S, K> {
    pub list: List<S, K>,
    pub create: Create<S, K>,
    pub resume: Resume<S, K>,
    pub delete: Delete<S, K>,
}

impl<S: AgentStore + ScheduleStore + UsageStore, K: AgentKit> App<S, K> {
    pub async fn handle(&self, request: Request) -> Response<Body> {
        let table = routes();
        let all: Vec<Route> = table.iter().map(|(r, _)| *r).collect();
        let matched = match edge::route(&all, request.method().as_str(), edge::path(&request)) {
            Ok(m) => m,
            Err(e) => return edge::problem(&e, edge::request_id(&request).as_deref()),
        };
        let method = request.method().as_str().to_string();
        let function = table
            .iter()
            .find(|(r, _)| r.pattern == matched.pattern && r.method.eq_ignore_ascii_case(&method))
            .map(|(_, f)| *f);
        match function {
            Some(Function::List) => self.list.handle(request).await,
            Some(Function::Create) => self.create.handle(request).await,
            Some(Function::Resume) => self.resume.handle(request).await,
            Some(Function::Delete) => self.delete.handle(request).await,
            None => edge::problem(
                &snapwake::Error::RouteNotFound,
                edge::request_id(&request).as_deref(),
            ),
        }
    }
}
