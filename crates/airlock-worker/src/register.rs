//! A worker that registers itself (`airlock worker --register URL`): every
//! [`EVERY`] it tells a control plane (through the deployment's Service, any replica)
//! the address replicas reach it at, with the deployment's worker token as its
//! bearer and the credential it made for itself at start (replicas must say that
//! one in their hello; see `process::run_listening`); that replica writes both to
//! the shared store, where every replica learns of it. The worker holds no
//! database credentials: what it says goes through a control plane.

use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use zeroize::Zeroizing;

/// How often a worker says it is there (a replica's heartbeat).
pub const EVERY: Duration = Duration::from_secs(2);

/// Where and as what a worker registers.
pub struct Registering {
    /// The control plane's root (`http://airlock.airlock.svc:8080`).
    pub control_plane: url::Url,
    /// `host:port` replicas reach this worker at.
    pub address: String,
    /// The deployment's worker token (the bearer of the registration).
    pub token: Zeroizing<String>,
    /// This worker's own credential, made at its start.
    pub own: Zeroizing<String>,
}

impl std::fmt::Debug for Registering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registering")
            .field("control_plane", &self.control_plane.as_str())
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Registering {
    /// Checks what was given: an `http://` control plane (inside the deployment;
    /// the ingress terminates TLS for everyone else) and a `host:port` address.
    pub fn new(
        control_plane: &str,
        address: &str,
        token: &str,
        own: &str,
    ) -> Result<Registering, String> {
        let url = url::Url::parse(control_plane)
            .map_err(|e| format!("--register `{control_plane}`: {e}"))?;
        if url.scheme() != "http" || url.host_str().is_none() {
            return Err(format!(
                "--register `{control_plane}`: give the control plane's http:// address inside the deployment"
            ));
        }
        let valid = address.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
        });
        if !valid || address.len() > 255 {
            return Err(format!("`{address}` is not host:port"));
        }
        Ok(Registering {
            control_plane: url,
            address: address.to_owned(),
            token: Zeroizing::new(token.to_owned()),
            own: Zeroizing::new(own.to_owned()),
        })
    }

    /// Registers every [`EVERY`] until dropped; a control plane that does not
    /// answer is tried again at the next beat.
    pub async fn run(self) {
        let mut told = None;
        loop {
            let said = self.once().await;
            // Said once per change, not every beat.
            if told.as_ref() != Some(&said) {
                match &said {
                    Ok(()) => {
                        tracing::info!(address = %self.address, "registered with the control plane")
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "could not register with the control plane")
                    }
                }
                told = Some(said);
            }
            tokio::time::sleep(EVERY).await;
        }
    }

    async fn once(&self) -> Result<(), String> {
        let url = &self.control_plane;
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().unwrap_or(80);
        let stream = tokio::time::timeout(EVERY, tokio::net::TcpStream::connect((host, port)))
            .await
            .map_err(|_| "the control plane did not answer".to_owned())?
            .map_err(|e| format!("cannot reach the control plane: {e}"))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let body = Zeroizing::new(
            serde_json::json!({
                "address": self.address,
                "pid": std::process::id(),
                "token": self.own.as_str(),
            })
            .to_string(),
        );
        let path = format!("{}/api/v1/workers", url.path().trim_end_matches('/'));
        let request = http::Request::post(path)
            .header(http::header::HOST, format!("{host}:{port}"))
            .header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", self.token.as_str()),
            )
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
            .map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(EVERY, sender.send_request(request))
            .await
            .map_err(|_| "the control plane did not answer".to_owned())?
            .map_err(|e| e.to_string())?;
        match response.status().as_u16() {
            204 => Ok(()),
            403 => Err("the control plane answered 403: another worker holds this address (it registered within the last seconds)".to_owned()),
            status => Err(format!("the control plane answered {status}")),
        }
    }
}
