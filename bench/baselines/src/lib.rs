//! What the two baseline servers share: the address to listen on.

use std::net::SocketAddr;

/// The address from `--listen ADDR`, `--listen=ADDR` or a positional `ADDR`
/// (127.0.0.1:8080 when none is given).
pub fn listen_address() -> SocketAddr {
    let mut args = std::env::args().skip(1);
    let mut address = None;
    while let Some(arg) = args.next() {
        if arg == "--listen" {
            address = args.next();
        } else if let Some(value) = arg.strip_prefix("--listen=") {
            address = Some(value.to_owned());
        } else if !arg.starts_with('-') {
            address = Some(arg);
        } else {
            eprintln!("usage: {{b0|b1}} [--listen] ADDR");
            std::process::exit(2);
        }
    }
    let address = address.unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    address.parse().unwrap_or_else(|e| {
        eprintln!("bad address {address:?}: {e}");
        std::process::exit(2);
    })
}
