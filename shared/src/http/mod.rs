//! HTTP concerns shared by every function: routing and request parsing, JSON and
//! problem+json responses.

pub mod problem;
pub mod request;
pub mod response;

pub use problem::Problem;
