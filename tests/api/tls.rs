//! TLS in the server (`--tls-cert`, `--tls-key`): `https://` with HTTP/2 or HTTP/1.1 by ALPN,
//! `wss://` for AppSync's real-time protocol, a renewed certificate served without a restart,
//! and a handshake that stalls closed by the header read timeout.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tablegraph::config::{ConnectionLimits, HttpConfig, TlsFiles};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::helpers::{TestApp, spawn_app_with};

/// A bound on waiting for the server, so that a missing answer fails the test instead of
/// hanging it. Nothing waits for it to pass.
const PATIENCE: Duration = Duration::from_secs(20);

/// A self-signed certificate for 127.0.0.1, written as PEM into `dir`; answers its DER.
fn write_certificate(dir: &Path) -> CertificateDer<'static> {
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).expect("a certificate");
    std::fs::write(dir.join("cert.pem"), made.cert.pem()).expect("the certificate is written");
    std::fs::write(dir.join("key.pem"), made.signing_key.serialize_pem())
        .expect("the key is written");
    made.cert.der().clone()
}

fn files(dir: &Path) -> TlsFiles {
    TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    }
}

/// A scratch directory of the test's own.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tablegraph-tls-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

async fn tls_app(dir: &Path, limits: ConnectionLimits) -> TestApp {
    spawn_app_with(HttpConfig {
        tls: Some(files(dir)),
        connections: limits,
        ..HttpConfig::default()
    })
    .await
}

/// A TLS connection to `app` trusting `certificate`, offering `alpn`.
async fn connect(
    app: &TestApp,
    certificate: &CertificateDer<'static>,
    alpn: &[&[u8]],
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    tokio::time::timeout(PATIENCE, try_connect(app, certificate, alpn))
        .await
        .expect("the handshake ends in time")
        .expect("the handshake succeeds with the certificate trusted")
}

/// A TLS connection to `app` trusting `certificate` alone, or the handshake's error.
async fn try_connect(
    app: &TestApp,
    certificate: &CertificateDer<'static>,
    alpn: &[&[u8]],
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let mut roots = tokio_rustls::rustls::RootCertStore::empty();
    roots.add(certificate.clone()).expect("a root");
    let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
    let mut config = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = tokio::net::TcpStream::connect(app.address)
        .await
        .expect("a connection");
    let name = ServerName::try_from("127.0.0.1").expect("a name");
    TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
}

#[tokio::test]
async fn https_speaks_http2_or_http1_by_alpn_and_wss_carries_appsync_subscriptions() {
    let dir = scratch("serve");
    let certificate = write_certificate(&dir);
    let app = tls_app(&dir, ConnectionLimits::default()).await;

    let h2 = connect(&app, &certificate, &[b"h2", b"http/1.1"]).await;
    assert_eq!(h2.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));

    let mut http1 = connect(&app, &certificate, &[b"http/1.1"]).await;
    http1
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .await
        .expect("a request");
    let mut answer = String::new();
    tokio::time::timeout(PATIENCE, http1.read_to_string(&mut answer))
        .await
        .expect("an answer in time")
        .expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // AppSync's real-time protocol over wss://, as aws-amplify connects.
    let header = json!({ "host": format!("127.0.0.1:{}", app.address.port()) });
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(header.to_string());
    let mut request = format!("wss://127.0.0.1:{}/graphql/realtime", app.address.port())
        .into_client_request()
        .expect("a request");
    request.headers_mut().insert(
        "sec-websocket-protocol",
        format!("graphql-ws, header-{encoded}")
            .parse()
            .expect("a value"),
    );
    let stream = connect(&app, &certificate, &[]).await;
    let (mut socket, _) = tokio_tungstenite::client_async(request, stream)
        .await
        .expect("the WebSocket opens over TLS");
    socket
        .send(Message::text(
            json!({ "type": "connection_init" }).to_string(),
        ))
        .await
        .expect("sent");
    let ack = tokio::time::timeout(PATIENCE, socket.next())
        .await
        .expect("an answer in time")
        .expect("open")
        .expect("a message");
    let ack: Value = serde_json::from_str(ack.to_text().expect("text")).expect("JSON");
    assert_eq!(ack["type"], "connection_ack", "{ack}");
}

#[tokio::test]
async fn a_renewed_certificate_is_served_without_a_restart() {
    let dir = scratch("renew");
    let first = write_certificate(&dir);
    let app = tls_app(&dir, ConnectionLimits::default()).await;
    let presented = |stream: &tokio_rustls::client::TlsStream<tokio::net::TcpStream>| {
        stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|chain| chain.first().cloned())
    };
    let stream = connect(&app, &first, &[]).await;
    assert_eq!(presented(&stream), Some(first));

    // The files change: new connections get the new certificate once the server looked
    // (every 2 s); until then the old one, which the client no longer trusts, fails.
    let second = write_certificate(&dir);
    let renewed = async {
        loop {
            if let Ok(stream) = try_connect(&app, &second, &[]).await {
                return presented(&stream);
            }
            tokio::time::sleep(tablegraph::http::WATCH_INTERVAL / 4).await;
        }
    };
    let served = tokio::time::timeout(PATIENCE, renewed)
        .await
        .expect("the renewed certificate is served in time");
    assert_eq!(served, Some(second));
}

#[tokio::test]
async fn a_handshake_that_stalls_is_closed_by_the_header_read_timeout() {
    let dir = scratch("stall");
    write_certificate(&dir);
    let app = tls_app(
        &dir,
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(1),
            ..ConnectionLimits::default()
        },
    )
    .await;
    let mut tcp = tokio::net::TcpStream::connect(app.address)
        .await
        .expect("a connection");
    // The first bytes of a ClientHello's record, and then nothing.
    tcp.write_all(&[0x16, 0x03, 0x01]).await.expect("sent");
    let mut rest = Vec::new();
    let read = tokio::time::timeout(PATIENCE, tcp.read_to_end(&mut rest))
        .await
        .expect("the server closes the connection in time");
    assert!(read.is_ok_and(|n| n == 0) || rest.is_empty(), "{rest:?}");
}
