//! One simulated deployment (docs/testing.md, "One simulated deployment"): every function of
//! snapwake in one process (list, create, resume with its tick and queue consumer, delete
//! with its sweep, refresh and offboarding, deploy, the stream relayed to the bus), over the
//! in-memory table and the strict AgentKit simulator, on one simulated clock (tokio's, paused:
//! `snapwake::ambient::simulate_from`). A studio drawn from one seed works with it for
//! weeks, with faults at every step, and a reference model checks as it goes what must hold.
//! A failure answers the seed and the last lines of what happened; the same seed draws the
//! same studio, acts and faults again.
//!
//! Files: `invocation.rs` (an invocation, the table's faults, stops between any two calls),
//! `world.rs` (the functions and what they run on), `studio.rs` (the people and their habits),
//! `people.rs` (people as clients), `model.rs` (what the studio did), `checks.rs`, `idle.rs` and
//! `views.rs` (the invariants), this file (the run, minute by minute).

mod checks;
mod idle;
mod invocation;
mod logs;
mod model;
mod people;
mod studio;
mod trace;
mod usage;
mod views;
mod world;

pub mod run;

pub use run::{run, Failure, Faults, Report, Settings};
pub use trace::Trace;
pub use world::Deployment;
