//! Connections that send nothing, or too little, cannot hold the server's descriptors: they are
//! closed by the header read timeout, and at the connection cap the oldest idle one makes room.

use std::process::Stdio;
use std::time::Duration;

use tablegraph::config::{ConnectionLimits, HttpConfig};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::helpers::spawn_app_with;

/// How long a test waits for what must happen before it calls it a failure (not a measure).
const FAIL_AFTER: Duration = Duration::from_secs(60);

/// Reads until the server closes `stream`; what it sent before.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut said = Vec::new();
    let read = tokio::time::timeout(FAIL_AFTER, async {
        loop {
            let mut buffer = [0_u8; 1024];
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => said.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server kept the connection open");
    String::from_utf8_lossy(&said).into_owned()
}

/// A request's head that stops before its end.
const HALF_A_HEAD: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Drip: a";

/// A connection to `address` that has sent `bytes`.
async fn sending(address: &str, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.expect("connects");
    stream.write_all(bytes).await.expect("writes");
    stream
}

/// A connection that is answered one request, then sends half of the next head, is closed
/// without a second answer.
async fn a_second_head_cut_short(address: &str) {
    let mut second = sending(address, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let mut answer = [0_u8; 512];
    let read = second.read(&mut answer).await.expect("the first answer");
    let first = String::from_utf8_lossy(&answer[..read]).into_owned();
    assert!(first.starts_with("HTTP/1.1 200 OK"), "{first}");
    second
        .write_all(b"GET /healthz HTTP/1.1\r\nHo")
        .await
        .expect("writes");
    let said = read_to_close(&mut second).await;
    assert!(!said.contains("200 OK"), "{said}");
}

/// How many connections the header read timeout and the idle timeout closed, from `/metrics`
/// read over a connection of its own that the server closes as it answers (no timer's).
async fn closed_by_timers(address: &str) -> (f64, f64) {
    let mut scrape = sending(
        address,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    let page = read_to_close(&mut scrape).await;
    (
        sample(
            &page,
            "tablegraph_connections_closed_total{cause=\"header_timeout\"}",
        ),
        sample(
            &page,
            "tablegraph_connections_closed_total{cause=\"idle_timeout\"}",
        ),
    )
}

#[tokio::test]
async fn a_silent_connection_and_a_half_sent_head_meet_the_header_timer_and_a_kept_alive_one_the_idle_timer()
 {
    // Timers of different lengths, so that one cannot pass for the other; what is asserted is
    // which timer closed each connection, as counted on /metrics, not how long it took.
    let app = spawn_app_with(HttpConfig {
        connections: ConnectionLimits {
            header_read_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(3),
            max_connections: None,
        },
        ..HttpConfig::default()
    })
    .await;
    let address = app.address.to_string();
    assert_eq!(closed_by_timers(&address).await, (0.0, 0.0));

    let mut silent = TcpStream::connect(&address).await.expect("connects");
    assert_eq!(read_to_close(&mut silent).await, "");
    assert_eq!(closed_by_timers(&address).await, (1.0, 0.0), "silent");

    let mut kept = sending(&address, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let said = read_to_close(&mut kept).await;
    assert!(
        said.starts_with("HTTP/1.1 200 OK") && said.ends_with("ok"),
        "answered, then closed when no next request came: {said}"
    );
    assert_eq!(closed_by_timers(&address).await, (1.0, 1.0), "kept alive");

    let mut half = sending(&address, HALF_A_HEAD).await;
    assert_eq!(read_to_close(&mut half).await, "");
    assert_eq!(closed_by_timers(&address).await, (2.0, 1.0), "half a head");

    // A kept-alive connection whose next head stops halfway meets the header timer too.
    a_second_head_cut_short(&address).await;
    assert_eq!(
        closed_by_timers(&address).await,
        (3.0, 1.0),
        "a second head"
    );
}

#[tokio::test]
async fn a_head_that_stops_halfway_is_closed_by_the_header_timer_long_before_the_idle_one() {
    // The idle timer is longer than this test waits for anything (FAIL_AFTER): only the header
    // timer can close these connections in time.
    let app = spawn_app_with(HttpConfig {
        connections: ConnectionLimits {
            header_read_timeout: Duration::from_secs(1),
            idle_timeout: FAIL_AFTER * 10,
            max_connections: None,
        },
        ..HttpConfig::default()
    })
    .await;
    let address = app.address.to_string();
    let mut half = sending(&address, HALF_A_HEAD).await;
    assert_eq!(read_to_close(&mut half).await, "");
    a_second_head_cut_short(&address).await;
    assert_eq!(closed_by_timers(&address).await, (2.0, 0.0));
}

/// The value of the sample `name` (with its labels) in a Prometheus text page.
fn sample(page: &str, name: &str) -> f64 {
    page.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in\n{page}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_low_descriptor_limit_silent_connections_make_room_for_a_request() {
    // This process holds 600 connections beside the other tests' sockets.
    let _ = rlimit::increase_nofile_limit(8192);
    // The server may open 256 descriptors: its cap is three quarters, 192 connections. The
    // header read timeout is long, so that the cap, not the timeout, closes connections here.
    let mut server = tokio::process::Command::new("sh")
        .args(["-c", "ulimit -n 256 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_tablegraph"))
        .args([
            "serve",
            "--memory",
            "--listen",
            "127.0.0.1:0",
            "--header-read-timeout-secs",
            "600",
            "--idle-timeout-secs",
            "600",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUST_LOG", "info")
        .env_remove("TABLEGRAPH_DYNAMODB_ENDPOINT")
        .env_remove("TABLEGRAPH_SIMULATED_LATENCY_MS")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("serve starts");
    let mut lines = BufReader::new(server.stderr.take().expect("stderr")).lines();
    let address = loop {
        let line = lines
            .next_line()
            .await
            .expect("a line")
            .expect("serve logs where it listens");
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.trim().trim_end_matches("/graphql").to_owned();
        }
    };
    let log = tokio::spawn(async move {
        let mut log = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            log.push(line);
        }
        log
    });

    let opened = 600;
    let mut silent = Vec::with_capacity(opened);
    for _ in 0..opened {
        silent.push(TcpStream::connect(&address).await.expect("connects"));
    }
    let client = reqwest::Client::new();
    let answer = tokio::time::timeout(
        FAIL_AFTER,
        client.get(format!("http://{address}/healthz")).send(),
    )
    .await
    .expect("a request is answered while 600 silent connections are open")
    .expect("answered");
    assert_eq!(answer.status(), 200);

    // 600 - 192 of them were closed to keep within the cap: the oldest idle ones, or, while
    // too many were still closing, the newest. Each is read to its end as it closes.
    let closed = opened - 192;
    let (ends, mut ended) = tokio::sync::mpsc::unbounded_channel();
    for mut stream in silent {
        let ends = ends.clone();
        tokio::spawn(async move {
            let mut buffer = [0_u8; 64];
            if matches!(stream.read(&mut buffer).await, Ok(0) | Err(_)) {
                let _ = ends.send(());
            }
        });
    }
    for n in 0..closed {
        tokio::time::timeout(FAIL_AFTER, ended.recv())
            .await
            .unwrap_or_else(|_| panic!("only {n} of the silent connections were closed"))
            .expect("a reader");
    }
    let page = client
        .get(format!("http://{address}/metrics"))
        .send()
        .await
        .expect("metrics answer")
        .text()
        .await
        .expect("a page");
    let shed = sample(&page, "tablegraph_connections_shed_total{which=\"idle\"}")
        + sample(&page, "tablegraph_connections_shed_total{which=\"new\"}");
    assert!(shed >= closed as f64, "{shed} shed\n{page}");
    // At most the cap, and the eighth of it that may be closing at once.
    let open = sample(&page, "tablegraph_connections_open");
    assert!(open <= (192 + 24) as f64, "{open} open\n{page}");

    server.start_kill().expect("SIGKILL");
    server.wait().await.expect("it stops");
    let log = log.await.expect("the log").join("\n");
    assert!(!log.contains("Too many open files"), "{log}");
}
