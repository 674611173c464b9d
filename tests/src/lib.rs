//! Helpers for snapwake's integration tests and benchmarks (the tests themselves live in
//! `tests/`, the benchmarks in `benches/`).

pub mod counting;
