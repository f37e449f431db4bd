//! AppSync's `AWS_IAM` mode for a self-hosted server: requests signed with Signature Version 4
//! (`Authorization: AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`) by the
//! long-term access keys of `--iam-credentials FILE`.
//!
//! A signature is checked by signing the request again with the key's secret, as the client
//! did: the headers it signed, its method, path and query, the SHA-256 of its body, its
//! `x-amz-date` (within five minutes of now) and its credential scope (date, region, service).
//! Temporary credentials (an `x-amz-security-token`, from STS or a Cognito identity pool) are
//! refused: only AWS can tell whether their session is valid.
//!
//! # Why aws-sigv4
//!
//! The signer the AWS SDKs sign with: the canonical request (header and value normalization,
//! path encoding, the body's hash) is computed exactly as the client computed it, so what the
//! server accepts is what AWS would accept, without a second implementation of the format.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use subtle::ConstantTimeEq as _;

use super::request::SignedRequest;

/// How far a request's `x-amz-date` may be from now, as AWS allows.
const CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);

/// The signing algorithm in an `Authorization` value that IAM verifies.
pub(super) const SIGV4: &str = "AWS4-HMAC-SHA256";

/// One access key of `--iam-credentials`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyEntry {
    secret: String,
    account_id: String,
    user_arn: String,
    /// The name the caller is known by (AppSync's `identity.username`); the access key id
    /// without.
    username: Option<String>,
}

/// A caller whose signature a configured access key made.
#[derive(Debug, Clone, PartialEq)]
pub struct IamIdentity {
    pub access_key_id: String,
    pub account_id: String,
    pub user_arn: String,
    pub username: String,
}

pub(super) struct IamVerifier {
    keys: HashMap<String, KeyEntry>,
    /// The region a signature's credential scope must name (`--iam-region`).
    region: String,
}

/// The service a signature's credential scope must name, as AppSync's clients sign for it.
const SERVICE: &str = "appsync";

/// The region the server is configured with when `--iam-region` is not given: the AWS
/// environment's variables (`AWS_REGION`, then `AWS_DEFAULT_REGION`), else us-east-1. (An AWS
/// profile's region is not read: give `--iam-region` where only a profile names it.)
pub(super) fn default_region() -> String {
    ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|region| !region.is_empty()))
        .unwrap_or_else(|| "us-east-1".to_owned())
}

impl IamVerifier {
    /// Reads `--iam-credentials`: a TOML table per access key id, each with `secret`,
    /// `account_id`, `user_arn` and optionally `username`. Signatures must be scoped to
    /// `region` and AppSync.
    pub(super) fn from_file(path: &Path, region: String) -> Result<IamVerifier, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --iam-credentials {}: {e}", path.display()))?;
        let keys: HashMap<String, KeyEntry> = toml::from_str(&text)
            .map_err(|e| format!("--iam-credentials {}: {}", path.display(), e.message()))?;
        if keys.is_empty() {
            return Err(format!(
                "--iam-credentials {}: it lists no access key",
                path.display()
            ));
        }
        if let Some((id, _)) = keys.iter().find(|(_, key)| key.secret.len() < 16) {
            return Err(format!(
                "--iam-credentials {}: the secret of {id} is too short to be one",
                path.display()
            ));
        }
        Ok(IamVerifier { keys, region })
    }

    /// The caller who signed `request` with `authorization`, or why it is refused (a message
    /// safe to show the client).
    pub(super) fn verify(
        &self,
        authorization: &str,
        request: &SignedRequest,
        now: SystemTime,
    ) -> Result<IamIdentity, &'static str> {
        let header = |name: &str| {
            request
                .headers
                .iter()
                .find(|(given, _)| given == name)
                .map(|(_, value)| value.as_str())
        };
        if header("x-amz-security-token").is_some() {
            return Err(
                "it is signed with temporary credentials (STS or a Cognito identity \
                 pool), which only AWS can verify; sign with a long-term access key of \
                 --iam-credentials",
            );
        }
        let parts = Parts::of(authorization).ok_or("its Authorization header is not SigV4")?;
        let key = self
            .keys
            .get(parts.access_key_id)
            .ok_or("it is signed with an unknown access key")?;
        let date = header("x-amz-date").ok_or("it has no x-amz-date")?;
        let time = parse_amz_date(date).ok_or("its x-amz-date is not a date")?;
        let skew = now
            .duration_since(time)
            .unwrap_or_else(|ahead| ahead.duration());
        if skew > CLOCK_SKEW {
            return Err("its x-amz-date is more than five minutes from now");
        }
        if !date.starts_with(parts.date) {
            return Err("its credential scope's date is not its x-amz-date's");
        }
        if parts.service != SERVICE {
            return Err("its credential scope names another service than appsync");
        }
        if parts.region != self.region {
            return Err("its credential scope names another region than this API's (--iam-region)");
        }
        // The host it signed for: its `host` header, or HTTP/2's `:authority`.
        let host = header("host")
            .or(request.authority.as_deref())
            .ok_or("it names no host")?;
        if !parts.signed_headers.split(';').any(|name| name == "host") {
            return Err("it does not sign its host header");
        }
        // The headers it signed, as it sent them; `x-amz-date` is added by the signer.
        let mut signed = Vec::new();
        for name in parts.signed_headers.split(';') {
            if name == "x-amz-date" {
                continue;
            }
            let mut values: Vec<&str> = request
                .headers
                .iter()
                .filter(|(given, _)| given == name)
                .map(|(_, value)| value.as_str())
                .collect();
            if name == "host" && values.is_empty() {
                values.push(host);
            }
            if values.is_empty() {
                return Err("it signed a header it did not send");
            }
            for value in values {
                signed.push((name, value));
            }
        }
        let expected = self.signature(key, &parts, request, host, signed, time)?;
        if bool::from(expected.as_bytes().ct_eq(parts.signature.as_bytes())) {
            Ok(IamIdentity {
                access_key_id: parts.access_key_id.to_owned(),
                account_id: key.account_id.clone(),
                user_arn: key.user_arn.clone(),
                username: key
                    .username
                    .clone()
                    .unwrap_or_else(|| parts.access_key_id.to_owned()),
            })
        } else {
            Err("its signature does not match")
        }
    }

    /// The signature the key makes for the request.
    fn signature(
        &self,
        key: &KeyEntry,
        parts: &Parts<'_>,
        request: &SignedRequest,
        host: &str,
        headers: Vec<(&str, &str)>,
        time: SystemTime,
    ) -> Result<String, &'static str> {
        use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
        let identity = aws_credential_types::Credentials::new(
            parts.access_key_id,
            key.secret.clone(),
            None,
            None,
            "tablegraph-iam-credentials",
        )
        .into();
        let mut settings = SigningSettings::default();
        // Exactly the headers the client signed are given, and all of them are signed.
        settings.excluded_headers = None;
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(parts.region)
            .name(parts.service)
            .time(time)
            .settings(settings)
            .build()
            .map_err(|_| "its credential scope is incomplete")?
            .into();
        // An absolute URI: the signer reads the path and query of it, and wants an authority.
        let uri = format!("http://{host}{}", request.path_and_query);
        let signable = SignableRequest::new(
            &request.method,
            uri.as_str(),
            headers.into_iter(),
            SignableBody::Bytes(&request.body),
        )
        .map_err(|_| "its path cannot be signed")?;
        let output = sign(signable, &params).map_err(|_| "it cannot be signed again")?;
        Ok(output.signature().to_owned())
    }
}

/// The parts of `AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/SERVICE/aws4_request,
/// SignedHeaders=a;b, Signature=hex`.
struct Parts<'a> {
    access_key_id: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: &'a str,
    signature: &'a str,
}

impl<'a> Parts<'a> {
    fn of(authorization: &'a str) -> Option<Parts<'a>> {
        let rest = authorization.trim().strip_prefix(SIGV4)?.trim_start();
        let mut credential = None;
        let mut signed_headers = None;
        let mut signature = None;
        for part in rest.split(',') {
            let (name, value) = part.trim().split_once('=')?;
            match name {
                "Credential" => credential = Some(value),
                "SignedHeaders" => signed_headers = Some(value),
                "Signature" => signature = Some(value),
                _ => return None,
            }
        }
        let mut scope = credential?.split('/');
        let parts = Parts {
            access_key_id: scope.next()?,
            date: scope.next()?,
            region: scope.next()?,
            service: scope.next()?,
            signed_headers: signed_headers?,
            signature: signature?,
        };
        (scope.next()? == "aws4_request" && scope.next().is_none()).then_some(parts)
    }
}

/// `20241127T143000Z` as a time.
fn parse_amz_date(text: &str) -> Option<SystemTime> {
    const FORMAT: &[time::format_description::BorrowedFormatItem<'_>] =
        time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let date = time::PrimitiveDateTime::parse(text, FORMAT).ok()?;
    Some(date.assume_utc().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_authorization_header_is_read_into_its_parts() {
        let parts = Parts::of(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20241127/eu-west-1/appsync/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, Signature=abc123",
        )
        .expect("SigV4");
        assert_eq!(parts.access_key_id, "AKIDEXAMPLE");
        assert_eq!(
            (parts.date, parts.region, parts.service),
            ("20241127", "eu-west-1", "appsync")
        );
        assert_eq!(parts.signed_headers, "content-type;host;x-amz-date");
        assert_eq!(parts.signature, "abc123");
        assert!(
            Parts::of("AWS4-HMAC-SHA256 Credential=A/B/C/D/other, SignedHeaders=h, Signature=s")
                .is_none()
        );
        assert!(Parts::of("Bearer x").is_none());
        assert_eq!(
            parse_amz_date("19700101T000100Z"),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(60))
        );
        assert_eq!(parse_amz_date("yesterday"), None);
    }
}
