//! The Tokio runtime of a test or benchmark that builds its own (to run on more threads than
//! `#[tokio::test]` gives, or from a plain `main`).

/// A multi-threaded runtime with `workers` worker threads, I/O and time enabled.
pub fn multi_thread_runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a Tokio runtime")
}
