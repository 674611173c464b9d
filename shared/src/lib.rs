//! snapwake's shared core: everything the Lambda functions, the local server and the CLI have
//! in common. The design is in `docs/architecture.md`.
//!
//! Modules are layered; each uses only the ones listed before it (the `layers` test in
//! `shared/tests/` fails on an import that points up):
//!
//! - [`timestamp`]: RFC 3339 as AgentKit writes it, and the one wall clock;
//! - [`ids`]: fresh random ids, drawn from a seed on a simulated deployment's thread;
//! - [`secret`]: a string `Debug` never shows (credentials, tokens, keys, session Endpoints);
//! - [`metrics`]: CloudWatch embedded-metric-format lines, emitted from one place;
//! - [`domain`]: kinds, retention, the agent record, its views, the Tool registry (no I/O);
//! - [`invocation`]: what an invocation is (its function, priority and trigger, set once at
//!   its entry point) and where it begins: its span (the ids every log line of it carries);
//! - [`deadline`]: the point by which an operation must answer;
//! - [`aws_calls`]: which function makes each AWS call, and the record of them the IAM check
//!   reads;
//! - [`aws_json`]: one signed call to an AWS service's JSON protocol (EventBridge, SQS);
//! - [`calendar`]: five-field cron in IANA time zones, and the instants it fires at;
//! - [`agentkit`]: the AgentKit client (signing, envelope, retries, regions) and its wire
//!   types; the strict simulator of the service is its own crate, `snapwake-sim`;
//! - [`store`]: the table port (`AgentStore`) and its DynamoDB and in-memory adapters;
//! - [`budget`]: the deployment's one AgentKit budget, kept in the table: slots, people first;
//! - [`error`]: the one error type, mapped to problem+json in [`http::edge`];
//! - [`events`]: state-change events: the store decorator that publishes them, EventBridge;
//! - [`identity`]: the caller read from an API Gateway request, who may act on what, and the
//!   UserSessionId codec;
//! - [`http`]: the HTTP edge every function serves through: routes, problem+json, ETags;
//! - [`registry_cache`]: the deployed Tools, read from the table and cached;
//! - [`locate`]: where an agent lives, and the questions asked of its Tool;
//! - [`lock`]: the per-agent lock (acquire, fenced writes, writes by anyone, poll leases, the
//!   pure `decide`) that wake, sleep, create, delete and deploy share;
//! - [`view`]: an agent as the API shows it, from its record and what AgentKit said;
//! - [`offboarding`]: an owner's offboarding progress and the unfinished ones (documents);
//! - [`index_sync`]: keeping the owner index in step with AgentKit;
//! - [`schedule`]: per-agent schedules: a body checked into a plan, a tick's decision;
//! - [`fanout`]: the queue the tick hands each due occurrence to: SQS, or one in process;
//! - [`sleep`]: sleep now over the lock: snapshot, wait until Ready, end the session;
//! - [`wake`]: the wake protocol over the lock (docs/wake-protocol.md);
//! - [`deploy`]: the reconcile of the AgentKit Tools;
//! - [`config`]: the composition root's input: environment → typed settings of each module,
//!   validated once at cold start;
//! - [`bootstrap`]: building the clients a function keeps across invocations.
//!
//! Ports and adapters: the domain imports nothing of ours; adapters depend on their port.

pub mod timestamp;
pub mod ids;
pub mod secret;
pub mod metrics;
pub mod domain;
pub mod invocation;
pub mod deadline;
pub mod aws_calls;
pub mod aws_json;
pub mod calendar;
pub mod agentkit;
pub mod store;
pub mod budget;
pub mod error;
pub mod events;
pub mod identity;
pub mod http;
pub mod registry_cache;
pub mod locate;
pub mod lock;
pub mod view;
pub mod offboarding;
pub mod index_sync;
pub mod schedule;
pub mod fanout;
pub mod sleep;
pub mod wake;
pub mod deploy;
pub mod config;
pub mod bootstrap;

pub use error::{Error, Result};
