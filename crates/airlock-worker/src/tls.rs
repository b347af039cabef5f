//! TLS for a worker on another machine: the worker presents a certificate, the
//! gateway trusts only the CA it is given for it. (On one machine the channel is a
//! unix socket, whose peer the kernel names; no TLS there.) rustls with the ring
//! provider, chosen explicitly so no process-wide default is needed.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A certificate, key or CA that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{what} `{path}`: {why}")]
pub struct TlsError {
    what: &'static str,
    path: String,
    why: String,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certificates(path: &Path, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let error = |why: String| TlsError {
        what,
        path: path.display().to_string(),
        why,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| error(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error(e.to_string()))?;
    if certs.is_empty() {
        return Err(error("holds no PEM certificate".to_owned()));
    }
    Ok(certs)
}

/// The worker's side: its certificate chain and key, both PEM.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let chain = certificates(cert, "the worker's certificate")?;
    let key_error = |why: String| TlsError {
        what: "the worker's key",
        path: key.display().to_string(),
        why,
    };
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| key_error(e.to_string()))?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|e| key_error(e.to_string()))?;
    Ok(Arc::new(config))
}

/// The worker's side from PEM text already read (a worker whose files only its
/// root supervisor could read; see `supervise`).
pub fn server_config_pem(cert: &[u8], key: &[u8]) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let error = |what: &'static str, why: String| TlsError {
        what,
        path: "(from its supervisor)".to_owned(),
        why,
    };
    let chain = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error("the worker's certificate", e.to_string()))?;
    if chain.is_empty() {
        return Err(error(
            "the worker's certificate",
            "holds no PEM certificate".to_owned(),
        ));
    }
    let key =
        PrivateKeyDer::from_pem_slice(key).map_err(|e| error("the worker's key", e.to_string()))?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|e| error("the worker's key", e.to_string()))?;
    Ok(Arc::new(config))
}

/// The gateway's side: trusts only the CA certificates in `ca` (PEM).
pub fn client_config(ca: &Path) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates(ca, "the workers' CA")? {
        roots.add(cert).map_err(|e| TlsError {
            what: "the workers' CA",
            path: ca.display().to_string(),
            why: e.to_string(),
        })?;
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError {
            what: "the workers' CA",
            path: ca.display().to_string(),
            why: e.to_string(),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
