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
        })
    }
}

/// A simulator serving on loopback. Dropping it stops the server.
pub struct RunningSim {
    addr: SocketAddr,
    control: SimControl,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
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
