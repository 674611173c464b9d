//! HTTP concerns shared by every function: the edge every answer leaves through, routing and
//! request parsing, JSON and problem+json responses, ETag and Location headers, the `Prefer:
//! wait` preference.

pub mod edge;
pub mod request;

pub use edge::Problem;
