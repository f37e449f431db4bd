//! Whether an AWS API's address is one on this machine that takes fixed local credentials: a
//! `tablegraph store`, dynoxide, DynamoDB Local, a Lambda emulator. The store and the functions'
//! Lambda client both ask, so that neither runs the SDK's provider chain (instance metadata
//! calls and all) for a service that checks no credentials.

/// Whether `endpoint` is on the loopback interface and the environment names no credentials
/// of its own (then those are used, through the SDK's usual chain).
pub fn takes_local_credentials(endpoint: &str) -> bool {
    let loopback = url::Url::parse(endpoint).is_ok_and(|url| match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    });
    let named = [
        "AWS_ACCESS_KEY_ID",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    loopback && !named
}
