//! Serving a simulator: [`router`] builds its HTTP app (the action endpoint and the control
//! surface), [`Simulator::start`] binds it to loopback in a background task, and
//! [`RunningSim`] stops it.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use crate::config::SimConfig;
use crate::control::{self, SimControl};
use crate::server;

/// The simulator's HTTP routes (actions at `/`, control under `/_sim/`), to mount in another
/// server. The control surface is unsigned: serve it on loopback only.
pub fn router(control: SimControl) -> axum::Router {
    server::routes()
        .merge(control::http::routes())
        .with_state(control)
}

/// Starts simulators.
pub struct Simulator;

impl Simulator {
    /// Bind `127.0.0.1:cfg.port` and serve in a background task.
    pub async fn start(cfg: SimConfig) -> std::io::Result<RunningSim> {
        if cfg.regions.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the simulator needs at least one region",
            ));
        }
        let control = SimControl::new(&cfg);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", cfg.port)).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = router(control.clone());
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!(error = %e, "sim: server stopped with an error");
            }
        });
        tracing::info!(%addr, "sim: AgentKit simulator listening");
        Ok(RunningSim {
            addr,
            control,
            stop: Some(tx),
            task: Some(task),
            release: None,
        })
    }

    /// As [`Simulator::start`], but served by a runtime and two threads of its own, as a
    /// remote service would be: its answers do not queue behind its callers' tasks. A test
    /// that keeps hundreds of callers busy on its own runtime would otherwise starve the
    /// service it calls, and measure its own scheduler instead of the protocol. The runtime
    /// stops when the returned simulator is dropped.
    pub fn start_apart(cfg: SimConfig) -> std::io::Result<RunningSim> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("agentkit-sim".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("agentkit-sim")
                    .enable_all()
                    .build();
                let runtime = match runtime {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let (release, released) = tokio::sync::oneshot::channel::<()>();
                    match Simulator::start(cfg).await {
                        Ok(mut sim) => {
                            sim.release = Some(release);
                            if tx.send(Ok(sim)).is_ok() {
                                // Until the simulator is dropped (its sender with it).
                                let _ = released.await;
                            }
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                        }
                    }
                });
            })?;
        rx.recv()
            .map_err(|_| std::io::Error::other("the simulator's thread ended before it served"))?
    }
}

/// A simulator serving on loopback. Dropping it stops the server.
pub struct RunningSim {
    addr: SocketAddr,
    control: SimControl,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// For [`Simulator::start_apart`]: dropped with the simulator, which ends its runtime.
    release: Option<tokio::sync::oneshot::Sender<()>>,
}

impl RunningSim {
    /// `http://127.0.0.1:PORT`, the `AGENTKIT_ENDPOINT` to give a client.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The control handle.
    pub fn control(&self) -> SimControl {
        self.control.clone()
    }

    /// Stop serving: in-flight requests get up to 2 s to finish.
    pub async fn shutdown(mut self) {
        self.stop_gracefully().await;
    }

    /// Serve until `signal` completes (e.g. `tokio::signal::ctrl_c()`), then shut down.
    pub async fn serve_until<F: Future>(mut self, signal: F) {
        if let Some(task) = self.task.as_mut() {
            tokio::select! {
                _ = signal => {}
                _ = task => { self.task = None; }
            }
        }
        self.stop_gracefully().await;
    }

    async fn stop_gracefully(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(Duration::from_secs(2), &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        // Kept-alive client connections would hold a graceful shutdown open; a dropped
        // simulator must free its port now.
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
