//! HTTP concerns shared by every function: the edge answers leave through, routing and request
//! parsing, JSON and problem+json, ETag and Location, `Prefer: wait`.

pub mod edge;
pub mod problem;

pub use problem::Problem;
