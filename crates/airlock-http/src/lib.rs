//! Airlock's HTTP surface, on axum. Today it answers `/healthz`, `/readyz` and `/` so
//! `make run` shows a live server; the MCP issue mounts Streamable HTTP at `/mcp`, and
//! later issues add `/api/v1`, the console and `/metrics` here. Only this crate knows
//! axum.

use std::future::Future;

use axum::Router;
use axum::routing::get;
use tokio::net::TcpListener;

/// The router with every endpoint this surface serves.
pub fn router() -> Router {
    Router::new()
        .route("/", get(index))
        .route("/healthz", get(healthz))
        .route("/readyz", get(healthz))
}

async fn index() -> &'static str {
    "Airlock is up. The MCP endpoint (/mcp) is not served by this build yet.\n"
}

async fn healthz() -> &'static str {
    "ok\n"
}

/// Serves [`router`] on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router())
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn healthz_answers_over_a_real_socket() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, async {
            let _ = stopped.await;
        }));
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.ends_with("ok\n"), "{response}");
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }
}
