//! TLS in the accept loop (`--tls-cert FILE --tls-key FILE`, PEM): `https://` and `wss://`
//! served directly, as `aws-amplify`'s subscriptions insist on `wss://`. rustls (the library
//! the tree already builds for its outgoing connections, with the aws-lc-rs provider) through
//! tokio-rustls; HTTP/2 and HTTP/1.1 offered by ALPN; each handshake bounded by the header
//! read timeout, on the same connection cap and timers as plain HTTP (`serve`).
//!
//! The certificate and key are read again on `SIGHUP` and when either file changes (looked at
//! every [`WATCH_INTERVAL`]), so a renewed certificate is served without a restart; a pair that
//! does not load is logged and the one in force is kept. Connections already open keep the
//! certificate they were made with.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::config::TlsFiles;

/// How often the files are looked at for a change.
pub const WATCH_INTERVAL: Duration = Duration::from_secs(2);

/// Why a certificate and key could not be served.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("the certificate and key do not make a TLS server: {0}")]
    Config(String),
}

/// The acceptor in force, which a reload replaces.
#[derive(Clone)]
pub struct Tls {
    files: TlsFiles,
    current: Arc<RwLock<TlsAcceptor>>,
    /// The files as they were when last read: a change after the load is seen by the watch.
    loaded: [Option<(SystemTime, u64)>; 2],
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("files", &self.files).finish()
    }
}

impl Tls {
    /// Reads `files`: an error names the file and what is wrong with it.
    pub fn load(files: &TlsFiles) -> Result<Tls, TlsError> {
        let loaded = stamps(files);
        Ok(Tls {
            files: files.clone(),
            current: Arc::new(RwLock::new(acceptor(files)?)),
            loaded,
        })
    }

    /// The acceptor for a connection accepted now.
    pub(super) fn acceptor(&self) -> TlsAcceptor {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Reads the files again; on an error the acceptor in force stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let fresh = acceptor(&self.files)?;
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = fresh;
        Ok(())
    }

    /// Reloads on `SIGHUP` and when a file changes (since it was loaded), until the task is
    /// aborted.
    pub fn watch(&self) -> tokio::task::JoinHandle<()> {
        let tls = self.clone();
        tokio::spawn(async move {
            #[cfg(unix)]
            let mut hangup =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
            let mut seen = tls.loaded;
            let mut ticks = tokio::time::interval(WATCH_INTERVAL);
            loop {
                #[cfg(unix)]
                let signalled = async {
                    match hangup.as_mut() {
                        Some(hangup) => hangup.recv().await,
                        None => std::future::pending().await,
                    }
                };
                #[cfg(not(unix))]
                let signalled = std::future::pending::<Option<()>>();
                let why = tokio::select! {
                    _ = signalled => "SIGHUP",
                    _ = ticks.tick() => {
                        let now = stamps(&tls.files);
                        if now == seen {
                            continue;
                        }
                        seen = now;
                        "a changed file"
                    }
                };
                match tls.reload() {
                    Ok(()) => tracing::info!(cause = why, "reloaded the TLS certificate"),
                    Err(error) => {
                        tracing::warn!(cause = why, %error, "kept the TLS certificate in force");
                    }
                }
            }
        })
    }
}

/// When each file was last changed, and its length, to tell a rewrite.
fn stamps(files: &TlsFiles) -> [Option<(SystemTime, u64)>; 2] {
    let stamp = |path: &Path| {
        let metadata = std::fs::metadata(path).ok()?;
        Some((metadata.modified().ok()?, metadata.len()))
    };
    [stamp(&files.cert), stamp(&files.key)]
}

fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, TlsError> {
    let unreadable = |path: &Path, reason: String| TlsError::File {
        path: path.to_owned(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| unreadable(&files.cert, e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unreadable(&files.cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(unreadable(
            &files.cert,
            "holds no certificate (PEM, `-----BEGIN CERTIFICATE-----`)".to_owned(),
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| unreadable(&files.key, format!("holds no private key in PEM: {e}")))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    // HTTP/2 first, as browsers and gRPC-style clients prefer; HTTP/1.1 for the rest and for
    // WebSockets.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_do_not_load_are_named_and_a_failed_reload_keeps_the_pair_in_force() {
        let dir = std::env::temp_dir().join(format!("tablegraph-tls-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let files = TlsFiles {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        let missing = Tls::load(&files).expect_err("no files");
        assert!(missing.to_string().contains("cert.pem"), "{missing}");
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .expect("a certificate");
        std::fs::write(&files.cert, made.cert.pem()).expect("written");
        std::fs::write(&files.key, "not a key").expect("written");
        let no_key = Tls::load(&files).expect_err("no key");
        assert!(
            no_key.to_string().contains("key.pem: holds no private key"),
            "{no_key}"
        );
        std::fs::write(&files.key, made.signing_key.serialize_pem()).expect("written");
        let tls = Tls::load(&files).expect("the pair loads");
        let before = Arc::as_ptr(tls.acceptor().config());
        std::fs::write(&files.cert, "garbage").expect("written");
        let refused = tls.reload().expect_err("garbage");
        assert!(refused.to_string().contains("cert.pem"), "{refused}");
        assert_eq!(
            Arc::as_ptr(tls.acceptor().config()),
            before,
            "the pair in force stays"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn sighup_reads_the_files_again() {
        let dir = std::env::temp_dir().join(format!("tablegraph-tls-hup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let files = TlsFiles {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .expect("a certificate");
        std::fs::write(&files.cert, made.cert.pem()).expect("written");
        std::fs::write(&files.key, made.signing_key.serialize_pem()).expect("written");
        let tls = Tls::load(&files).expect("the pair loads");
        // Held by the test too, so that the signal never finds the process without a handler.
        let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .expect("a handler");
        let watching = tls.watch();
        let before = Arc::as_ptr(tls.acceptor().config());
        // The files do not change: only the signal reads them again.
        let reloaded = async {
            loop {
                let sent = std::process::Command::new("kill")
                    .args(["-HUP", &std::process::id().to_string()])
                    .status()
                    .expect("kill runs");
                assert!(sent.success());
                hangups.recv().await;
                tokio::task::yield_now().await;
                if Arc::as_ptr(tls.acceptor().config()) != before {
                    return;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(20), reloaded)
            .await
            .expect("the watch reloads on SIGHUP");
        watching.abort();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
