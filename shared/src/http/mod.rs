//! HTTP concerns shared by every function: problem+json errors.

pub mod problem;

pub use problem::Problem;
