//! Who may call `/graphql`: AppSync's API keys, JWT bearer tokens (OIDC-style) and Lambda
//! authorizer (`lambda`), for a self-hosted server. Tokens may come from several issuers, each
//! with its keys in a JWKS file, at a JWKS URL or found by OIDC discovery (`jwks`), or an HS256
//! secret.
//!
//! With none configured, the API is open. Otherwise every GraphQL request needs one valid
//! credential, told apart by one rule on every transport: an `Authorization` value holding a
//! JWT (with `Bearer ` or without, as `aws-amplify` sends it) is a token of a configured issuer
//! when issuers are configured (and, with a Lambda authorizer, when it names one of them as
//! `iss`); a SigV4 signature is IAM's; with a Lambda authorizer, any other `Authorization` value
//! goes to it; an `x-api-key` header names one of the configured keys. `Authorization`, when
//! present, takes precedence. A missing or invalid credential answers 401 before any GraphQL
//! runs. Health, readiness, metrics and the GraphiQL page itself stay open; the page lets the
//! user set the header.
//!
//! A verified token's claims travel with the request as a [`Caller`], for resolvers.

mod iam;
mod jwks;
mod lambda;
mod refusals;
mod request;

use std::path::PathBuf;

pub use iam::IamIdentity;
use iam::SIGV4;
pub use lambda::{DEFAULT_TTL, LambdaAuthorizerConfig, LambdaIdentity};
pub use refusals::{SUMMARY_EVERY, Transport};
pub use request::{RequestContext, SignedRequest};

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use subtle::ConstantTimeEq as _;

/// The header that carries an API key, as in AppSync.
pub const API_KEY_HEADER: &str = "x-api-key";

/// Seconds of clock skew allowed when checking `exp` and `nbf`.
const CLOCK_SKEW_SECS: u64 = 30;

/// How requests authenticate, as configured.
#[derive(Debug, Clone, Default)]
pub struct AuthConfig {
    pub api_keys: Vec<String>,
    /// The issuers whose tokens are accepted, each with its keys.
    pub jwt: Vec<JwtConfig>,
    /// The claim naming a token's owner for `@auth` owner rules (`--owner-claim`); `sub`, or a
    /// Cognito token's user name, without.
    pub owner_claim: Option<String>,
    /// The claim listing a token's groups (`--groups-claim`); `cognito:groups` without.
    pub groups_claim: Option<String>,
    /// A token whose `exp` is further ahead than this is refused (`--jwt-max-lifetime`);
    /// [`DEFAULT_MAX_TOKEN_LIFETIME`] without.
    pub jwt_max_lifetime: Option<std::time::Duration>,
    /// AppSync's Lambda authorizer (`--lambda-authorizer`).
    pub lambda_authorizer: Option<LambdaAuthorizerConfig>,
    /// The access keys whose SigV4 signatures are IAM callers (`--iam-credentials`).
    pub iam_credentials: Option<PathBuf>,
    /// The region their signatures must be scoped to (`--iam-region`); the AWS environment's
    /// region (or us-east-1) without.
    pub iam_region: Option<String>,
}

/// A day: the longest Cognito lets an ID or access token live. A token valid for longer (a
/// century ahead) is more likely forged with a leaked key or minted by mistake than meant.
pub const DEFAULT_MAX_TOKEN_LIFETIME: std::time::Duration =
    std::time::Duration::from_secs(24 * 3600);

#[derive(Debug, Clone)]
pub struct JwtConfig {
    pub keys: JwtKeys,
    /// The `iss` every token must carry.
    pub issuer: String,
    /// When set, the `aud` every token must include.
    pub audience: Option<String>,
    /// Keys served by the issuer are fetched again for a token naming an unknown key at most
    /// this often ([`DEFAULT_REFETCH_INTERVAL`]).
    pub refetch_interval: std::time::Duration,
}

/// A minute: how often at most an unknown key makes the keys be fetched again.
pub const DEFAULT_REFETCH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// Where token signatures are checked against.
#[derive(Debug, Clone)]
pub enum JwtKeys {
    /// A JWKS document (RS256/ES256/… keys, chosen by the token's `kid`), read at start-up.
    JwksFile(PathBuf),
    /// A JWKS document served at this URL: fetched at start-up, again when its `Cache-Control`
    /// says it is stale, and on a token with an unknown `kid` (at most once a minute).
    JwksUrl(String),
    /// The JWKS URL the issuer names at `<issuer>/.well-known/openid-configuration` (OIDC
    /// discovery), then as [`JwtKeys::JwksUrl`].
    Discovered,
    /// A shared HS256 secret.
    Hs256Secret(String),
}

/// The configuration could not be turned into a verifier.
#[derive(Debug, thiserror::Error)]
pub enum AuthSetupError {
    #[error("cannot read the JWKS file {path}: {reason}")]
    Jwks { path: PathBuf, reason: String },
    #[error("cannot fetch the keys of {url}: {reason}")]
    JwksUrl { url: String, reason: String },
    #[error("two token issuers are both {0}")]
    SameIssuer(String),
    #[error("an API key must not be empty")]
    EmptyApiKey,
    #[error("the HS256 secret must be at least 32 bytes")]
    WeakSecret,
    #[error("{0}")]
    LambdaAuthorizer(String),
    #[error("{0}")]
    Iam(String),
}

/// Who is calling, once authenticated.
#[derive(Debug, Clone, PartialEq)]
pub enum Caller {
    /// The API is open: no credential was needed.
    Anonymous,
    /// A valid API key.
    ApiKey,
    /// A verified token, with all of its claims.
    Token(serde_json::Map<String, serde_json::Value>),
    /// A caller the Lambda authorizer admitted.
    Lambda(LambdaIdentity),
    /// A request signed (SigV4) with an access key of `--iam-credentials`.
    Iam(IamIdentity),
}

impl Caller {
    /// A claim of a verified token (`sub`, `email`, custom claims); `None` otherwise.
    pub fn claim(&self, name: &str) -> Option<&serde_json::Value> {
        match self {
            Caller::Token(claims) => claims.get(name),
            _ => None,
        }
    }

    /// When the caller's token expires (`exp`, seconds since the epoch), if it has one.
    pub fn expires_at(&self) -> Option<u64> {
        // A number of any JSON form: a token may write `exp` with a fraction.
        let exp = self.claim("exp").and_then(serde_json::Value::as_f64)?;
        (exp.is_finite() && exp >= 0.0).then(|| exp.floor() as u64)
    }
}

/// Resolves when a token that expires at `exp` (seconds since the epoch) has expired; never
/// without one. What a long-lived answer (a WebSocket, an event stream) ends on.
pub async fn expired(exp: Option<u64>) {
    let Some(exp) = exp else {
        return std::future::pending().await;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    tokio::time::sleep(std::time::Duration::from_secs(exp.saturating_sub(now))).await;
}

/// Why a request was refused. The message is safe to show the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unauthorized {
    #[error("this API needs credentials: an x-api-key header or an Authorization: Bearer token")]
    Missing,
    #[error("the API key is not valid")]
    BadApiKey,
    #[error("the bearer token is not valid: {0}")]
    BadToken(&'static str),
    /// An `Authorization` header with nothing to check: never passed over for another
    /// credential, so that a client's broken token is not hidden by its API key.
    #[error("the Authorization header holds no credentials")]
    EmptyAuthorization,
    /// The Lambda authorizer answered `isAuthorized: false`.
    #[error("the Lambda authorizer did not authorize this request")]
    Denied,
    /// The Lambda authorizer could not be asked, or answered no decision.
    #[error("the Lambda authorizer could not decide on this request; try again later")]
    AuthorizerUnavailable,
    #[error("the request's IAM signature is not valid: {0}")]
    BadSignature(&'static str),
    #[error("this API does not accept IAM signatures")]
    NoIam,
}

/// Checks credentials; built once at start-up.
pub struct Authenticator {
    api_keys: Vec<String>,
    /// One per issuer.
    jwt: Vec<JwtVerifier>,
    /// How far ahead a token's `exp` may be.
    max_lifetime: std::time::Duration,
    lambda: Option<lambda::LambdaAuthorizer>,
    iam: Option<iam::IamVerifier>,
    refusals: refusals::Refusals,
}

struct JwtVerifier {
    keys: KeySet,
    issuer: String,
    audience: Option<String>,
}

/// The keys of one issuer.
enum KeySet {
    /// Read once at start-up: a file or a secret.
    Fixed(Vec<VerifyingKey>),
    /// Served by the issuer, and fetched again as it says.
    Remote(jwks::RemoteKeys),
}

#[derive(Clone)]
pub(crate) struct VerifyingKey {
    kid: Option<String>,
    algorithm: Algorithm,
    key: DecodingKey,
}

impl Authenticator {
    /// `None` when nothing is configured: the API is open. Keys served by an issuer are
    /// fetched now: an issuer that cannot be reached stops start-up.
    pub async fn from_config(config: &AuthConfig) -> Result<Option<Authenticator>, AuthSetupError> {
        if config.api_keys.is_empty()
            && config.jwt.is_empty()
            && config.lambda_authorizer.is_none()
            && config.iam_credentials.is_none()
        {
            return Ok(None);
        }
        if config.api_keys.iter().any(|key| key.trim().is_empty()) {
            return Err(AuthSetupError::EmptyApiKey);
        }
        let mut jwt: Vec<JwtVerifier> = Vec::with_capacity(config.jwt.len());
        for issuer in &config.jwt {
            if jwt.iter().any(|known| known.issuer == issuer.issuer) {
                return Err(AuthSetupError::SameIssuer(issuer.issuer.clone()));
            }
            jwt.push(JwtVerifier::new(issuer).await?);
        }
        let lambda = match &config.lambda_authorizer {
            Some(authorizer) => Some(
                lambda::LambdaAuthorizer::new(authorizer)
                    .await
                    .map_err(AuthSetupError::LambdaAuthorizer)?,
            ),
            None => None,
        };
        let iam = match &config.iam_credentials {
            Some(path) => {
                let region = config
                    .iam_region
                    .clone()
                    .unwrap_or_else(iam::default_region);
                Some(iam::IamVerifier::from_file(path, region).map_err(AuthSetupError::Iam)?)
            }
            None => None,
        };
        Ok(Some(Authenticator {
            api_keys: config.api_keys.clone(),
            jwt,
            max_lifetime: config
                .jwt_max_lifetime
                .unwrap_or(DEFAULT_MAX_TOKEN_LIFETIME),
            lambda,
            iam,
            refusals: refusals::Refusals::new(SUMMARY_EVERY),
        }))
    }

    /// Whether a 401 should invite a bearer token.
    pub fn accepts_tokens(&self) -> bool {
        !self.jwt.is_empty()
    }

    /// Whether checking this `Authorization` value reads the request itself
    /// ([`RequestContext`]): a SigV4 signature covers the body, and the Lambda authorizer is
    /// told what the request asks.
    pub fn reads_request(&self, authorization: Option<&str>) -> bool {
        (self.iam.is_some() && authorization.is_some_and(is_sigv4))
            || self.sends_to_authorizer(authorization)
    }

    /// Whether this `Authorization` value goes to the Lambda authorizer: not a JWT of a
    /// configured issuer, not a SigV4 signature.
    fn sends_to_authorizer(&self, authorization: Option<&str>) -> bool {
        self.lambda.is_some()
            && authorization.is_some_and(|value| {
                !self.holds_no_credentials(value)
                    && !is_sigv4(value)
                    && !jwt_in(value).is_some_and(|token| self.issued_here(token))
            })
    }

    /// Whether `token` names a configured issuer as its `iss` (not yet verified): a JWT of
    /// another issuer, with a Lambda authorizer, is the authorizer's to judge.
    fn issued_here(&self, token: &str) -> bool {
        jsonwebtoken::dangerous::insecure_decode_claims::<Issuer>(token)
            .ok()
            .and_then(|claims| claims.iss)
            .is_some_and(|iss| self.jwt.iter().any(|verifier| verifier.issuer == iss))
    }

    /// Whether an `Authorization` value holds nothing to check: empty, or a scheme's name with
    /// nothing after it (`Bearer`, `Basic `). A bare word is a Lambda authorizer's token when
    /// one is configured (its tokens may be any text), a scheme's name otherwise (a JWT has
    /// dots).
    fn holds_no_credentials(&self, value: &str) -> bool {
        let value = value.trim();
        let credentials = match value.split_once(' ') {
            Some((_, credentials)) => credentials.trim(),
            None if self.lambda.is_none() && value.chars().all(|c| c.is_ascii_alphabetic()) => "",
            None => value,
        };
        credentials.is_empty()
    }

    /// The refusals' metrics and the Lambda authorizer's, in Prometheus' text format.
    pub fn render_metrics(&self) -> String {
        let mut text = self.refusals.metrics().render();
        if let Some(lambda) = &self.lambda {
            text.push_str(&lambda.metrics().render());
        }
        text
    }

    /// Counts a request or connection refused on `transport` for `reason`, and tells it in the
    /// log without flooding it (see `refusals`).
    pub fn refused(&self, transport: Transport, reason: &dyn std::fmt::Display) {
        self.refusals.refused(transport, reason);
    }

    /// Checks a request's `Authorization` and `x-api-key` header values; `context` is what the
    /// request asks, for a Lambda authorizer.
    pub async fn authenticate(
        &self,
        authorization: Option<&str>,
        api_key: Option<&str>,
        context: &RequestContext,
    ) -> Result<Caller, Unauthorized> {
        if authorization.is_some_and(|value| self.holds_no_credentials(value)) {
            return Err(Unauthorized::EmptyAuthorization);
        }
        if let Some(value) = authorization.filter(|value| is_sigv4(value)) {
            let Some(iam) = &self.iam else {
                return Err(Unauthorized::NoIam);
            };
            return iam
                .verify(value, &context.signed, std::time::SystemTime::now())
                .map(Caller::Iam)
                .map_err(Unauthorized::BadSignature);
        }
        if let Some(lambda) = &self.lambda
            && let Some(value) = authorization
            && self.sends_to_authorizer(Some(value))
        {
            return lambda
                .authorize(value.trim(), context)
                .await
                .map(Caller::Lambda)
                .map_err(|refusal| match refusal {
                    lambda::Refusal::Denied => Unauthorized::Denied,
                    lambda::Refusal::Unavailable => Unauthorized::AuthorizerUnavailable,
                });
        }
        let bearer = authorization.and_then(|value| {
            let (scheme, token) = value.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
        // A JWT without `Bearer ` is a token too, as aws-amplify sends a user pool's.
        let bearer = bearer.or_else(|| authorization.and_then(jwt_in));
        if let Some(token) = bearer
            && !self.jwt.is_empty()
        {
            // The token's issuer picks the verifier; its signature and claims are checked next.
            let issuer = jsonwebtoken::dangerous::insecure_decode_claims::<Issuer>(token)
                .map_err(|_| Unauthorized::BadToken("it is not a JWT"))?
                .iss;
            let verifier = self
                .jwt
                .iter()
                .find(|verifier| Some(&verifier.issuer) == issuer.as_ref())
                .ok_or(Unauthorized::BadToken("it was issued by another issuer"))?;
            let claims = verifier.verify(token).await?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs();
            let latest = now
                .saturating_add(self.max_lifetime.as_secs())
                .saturating_add(CLOCK_SKEW_SECS);
            // `exp` is there: the verifier requires it.
            let expires = claims.get("exp").and_then(serde_json::Value::as_f64);
            if expires.is_none_or(|exp| exp > latest as f64) {
                return Err(Unauthorized::BadToken(
                    "it expires later than --jwt-max-lifetime allows",
                ));
            }
            return Ok(Caller::Token(claims));
        }
        match api_key {
            Some(given) if !self.api_keys.is_empty() => {
                let known = self.api_keys.iter().fold(false, |found, key| {
                    found | bool::from(key.as_bytes().ct_eq(given.as_bytes()))
                });
                if known {
                    Ok(Caller::ApiKey)
                } else {
                    Err(Unauthorized::BadApiKey)
                }
            }
            _ if bearer.is_some() => Err(Unauthorized::BadToken("this API does not accept tokens")),
            _ => Err(Unauthorized::Missing),
        }
    }
}

/// Whether an `Authorization` value is a SigV4 signature: IAM's, on every transport.
fn is_sigv4(value: &str) -> bool {
    value
        .trim_start()
        .strip_prefix(SIGV4)
        .is_some_and(|rest| rest.starts_with(' '))
}

/// The JWT an `Authorization` value holds, with `Bearer ` or without: three dot-separated
/// parts of base64url, the first a JSON header (`eyJ`).
fn jwt_in(value: &str) -> Option<&str> {
    let value = value.trim();
    let token = match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
        Some(_) => return None,
        None => value,
    };
    let parts: Vec<&str> = token.split('.').collect();
    let base64url = |part: &&str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    (parts.len() == 3 && token.starts_with("eyJ") && parts.iter().all(base64url)).then_some(token)
}

/// The one claim read before a token is verified: which issuer's keys to verify it with.
#[derive(serde::Deserialize)]
struct Issuer {
    iss: Option<String>,
}

impl JwtVerifier {
    async fn new(config: &JwtConfig) -> Result<JwtVerifier, AuthSetupError> {
        let keys = match &config.keys {
            JwtKeys::Hs256Secret(secret) => {
                if secret.len() < 32 {
                    return Err(AuthSetupError::WeakSecret);
                }
                KeySet::Fixed(vec![VerifyingKey {
                    kid: None,
                    algorithm: Algorithm::HS256,
                    key: DecodingKey::from_secret(secret.as_bytes()),
                }])
            }
            JwtKeys::JwksFile(path) => KeySet::Fixed(read_jwks(path)?),
            JwtKeys::JwksUrl(url) => {
                KeySet::Remote(jwks::RemoteKeys::fetch(url.clone(), config.refetch_interval).await?)
            }
            JwtKeys::Discovered => KeySet::Remote(
                jwks::RemoteKeys::discover(&config.issuer, config.refetch_interval).await?,
            ),
        };
        Ok(JwtVerifier {
            keys,
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
        })
    }

    /// Checks a verified token's audience, as AppSync does for a Cognito user pool: an ID
    /// token (`token_use: id`, or a token without `token_use`) names it in `aud`, an access
    /// token (`token_use: access`, which aws-amplify sends) in `client_id`. Any other
    /// `token_use` (a refresh token is not a JWT, but another kind might be) is refused.
    fn audience_of(
        &self,
        claims: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), &'static str> {
        let access = match claims.get("token_use").map(serde_json::Value::as_str) {
            None | Some(Some("id")) => false,
            Some(Some("access")) => true,
            Some(_) => return Err("its token_use is neither id nor access"),
        };
        let Some(audience) = &self.audience else {
            return Ok(());
        };
        let given = if access {
            claims.get("client_id")
        } else {
            claims.get("aud")
        };
        let matches = match given {
            None => return Err("it lacks a required claim (exp, iss, aud)"),
            Some(serde_json::Value::String(given)) => given == audience,
            Some(serde_json::Value::Array(given)) => {
                !access && given.iter().any(|one| one.as_str() == Some(audience))
            }
            Some(_) => false,
        };
        if matches {
            Ok(())
        } else {
            Err("it is meant for another audience")
        }
    }

    async fn verify(
        &self,
        token: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>, Unauthorized> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Unauthorized::BadToken("it is not a JWT"))?;
        // A token without `kid` may be signed by any key of its algorithm: each is tried.
        let wanted = |key: &VerifyingKey| {
            key.algorithm == header.alg
                && (header.kid.is_none() || key.kid.is_none() || key.kid == header.kid)
        };
        let keys = match &self.keys {
            KeySet::Fixed(keys) => std::sync::Arc::new(keys.clone()),
            KeySet::Remote(remote) => {
                let keys = remote.current().await;
                if keys.iter().any(wanted) {
                    keys
                } else {
                    // A key the issuer added since: fetched again, at most once a minute.
                    remote.after_unknown_key().await
                }
            }
        };
        let mut candidates = keys.iter().filter(|key| wanted(key)).peekable();
        if candidates.peek().is_none() {
            return Err(Unauthorized::BadToken("it is not signed by a known key"));
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = CLOCK_SKEW_SECS;
        validation.set_issuer(&[&self.issuer]);
        // The audience is checked below: where it sits depends on the kind of token.
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "iss"]);
        validation.validate_nbf = true;
        use jsonwebtoken::errors::ErrorKind;
        let mut failure = ErrorKind::InvalidSignature;
        for key in candidates {
            match jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
                token,
                &key.key,
                &validation,
            ) {
                Ok(data) => {
                    return self
                        .audience_of(&data.claims)
                        .map(|()| data.claims)
                        .map_err(Unauthorized::BadToken);
                }
                // Another key of the same algorithm may have signed it.
                Err(error) if *error.kind() == ErrorKind::InvalidSignature => {}
                // The signature matched this key (claims are checked after it) or the token
                // is malformed: no other key changes that.
                Err(error) => {
                    failure = error.into_kind();
                    break;
                }
            }
        }
        Err(Unauthorized::BadToken(match failure {
            ErrorKind::ExpiredSignature => "it has expired",
            ErrorKind::ImmatureSignature => "it is not valid yet",
            ErrorKind::InvalidIssuer => "it was issued by another issuer",
            ErrorKind::InvalidAudience => "it is meant for another audience",
            ErrorKind::InvalidSignature => "its signature does not match",
            ErrorKind::MissingRequiredClaim(_) => "it lacks a required claim (exp, iss, aud)",
            _ => "it could not be verified",
        }))
    }
}

/// What [`hs256_token`] puts in a token.
pub struct TokenClaims {
    pub issuer: String,
    pub audience: Option<String>,
    pub subject: String,
    /// Put in `cognito:groups`, where group rules look by default.
    pub groups: Vec<String>,
    pub expires_in: std::time::Duration,
}

/// A token a server configured with the HS256 `secret` accepts (`tablegraph token`).
pub fn hs256_token(secret: &str, claims: &TokenClaims) -> Result<String, AuthSetupError> {
    if secret.len() < 32 {
        return Err(AuthSetupError::WeakSecret);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut body = serde_json::json!({
        "iss": claims.issuer,
        "sub": claims.subject,
        "iat": now.as_secs(),
        "exp": (now + claims.expires_in).as_secs(),
        "cognito:groups": claims.groups,
    });
    if let Some(audience) = &claims.audience {
        body["aud"] = serde_json::Value::from(audience.as_str());
    }
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(Algorithm::HS256),
        &body,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .map_err(|_| AuthSetupError::WeakSecret)
}

fn read_jwks(path: &std::path::Path) -> Result<Vec<VerifyingKey>, AuthSetupError> {
    let text = std::fs::read_to_string(path).map_err(|e| AuthSetupError::Jwks {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    parse_jwks(&text).map_err(|reason| AuthSetupError::Jwks {
        path: path.to_owned(),
        reason,
    })
}

/// The signing keys of a JWKS document. A key marked for encryption (`"use": "enc"`), or of
/// a kind or algorithm this server cannot verify with, is skipped (and logged), as issuers
/// publish such keys beside their signing keys; the document fails only when no key is left.
pub(crate) fn parse_jwks(text: &str) -> Result<Vec<VerifyingKey>, String> {
    #[derive(serde::Deserialize)]
    struct Document {
        keys: Vec<serde_json::Value>,
    }
    let document: Document = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut keys = Vec::with_capacity(document.keys.len());
    let mut skipped = Vec::new();
    for value in document.keys {
        let kid = value
            .get("kid")
            .and_then(|kid| kid.as_str())
            .map(str::to_owned);
        match signing_key(value) {
            Ok(key) => keys.push(key),
            Err(reason) => skipped.push(format!(
                "{}: {reason}",
                kid.as_deref().unwrap_or("a key without kid")
            )),
        }
    }
    if !skipped.is_empty() {
        tracing::warn!(skipped = %skipped.join("; "), "JWKS keys that cannot verify tokens are skipped");
    }
    if keys.is_empty() {
        return Err(if skipped.is_empty() {
            "it has no keys".to_owned()
        } else {
            format!(
                "it has no key that can verify a token ({})",
                skipped.join("; ")
            )
        });
    }
    Ok(keys)
}

/// One JWK as a key to verify signatures with, or why it is not one.
fn signing_key(value: serde_json::Value) -> Result<VerifyingKey, String> {
    if value.get("use").and_then(|use_| use_.as_str()) == Some("enc") {
        return Err("it is an encryption key (\"use\": \"enc\")".to_owned());
    }
    let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(value).map_err(|e| e.to_string())?;
    // A JWKS is public: a symmetric key in it would let anyone who reads it sign tokens.
    if matches!(
        jwk.algorithm,
        jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)
    ) {
        return Err(
            "it is a symmetric (\"kty\": \"oct\") key, which a public key set must not hold; \
             give an HS256 secret with --jwt-hs256-secret"
                .to_owned(),
        );
    }
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string())?;
    let algorithm = match jwk.common.key_algorithm {
        Some(algorithm) => Algorithm::try_from(algorithm).map_err(|e| e.to_string())?,
        None => match &jwk.algorithm {
            jsonwebtoken::jwk::AlgorithmParameters::RSA(_) => Algorithm::RS256,
            jsonwebtoken::jwk::AlgorithmParameters::EllipticCurve(_) => Algorithm::ES256,
            _ => return Err("a key without \"alg\" must be RSA or EC".to_owned()),
        },
    };
    if matches!(
        algorithm,
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
    ) {
        return Err(format!(
            "it names {algorithm:?}, a symmetric algorithm, which a public key set cannot verify"
        ));
    }
    Ok(VerifyingKey {
        kid: jwk.common.key_id.clone(),
        algorithm,
        key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_expires_when_its_exp_says_in_any_json_number() {
        let caller = |exp: serde_json::Value| {
            let mut claims = serde_json::Map::new();
            claims.insert("exp".into(), exp);
            Caller::Token(claims)
        };
        assert_eq!(
            caller(serde_json::json!(1_900_000_000)).expires_at(),
            Some(1_900_000_000)
        );
        assert_eq!(
            caller(serde_json::json!(1_900_000_000.5)).expires_at(),
            Some(1_900_000_000)
        );
        assert_eq!(caller(serde_json::json!("soon")).expires_at(), None);
        assert_eq!(Caller::Anonymous.expires_at(), None);
    }

    async fn keys_only(keys: &[&str]) -> Authenticator {
        Authenticator::from_config(&AuthConfig {
            api_keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            ..AuthConfig::default()
        })
        .await
        .expect("valid configuration")
        .expect("auth is on")
    }

    #[tokio::test]
    async fn no_configuration_means_an_open_api() {
        assert!(
            Authenticator::from_config(&AuthConfig::default())
                .await
                .expect("valid")
                .is_none()
        );
    }

    #[tokio::test]
    async fn any_configured_api_key_passes_and_others_do_not() {
        let auth = keys_only(&["key-one", "key-two"]).await;
        assert_eq!(
            auth.authenticate(None, Some("key-two"), &RequestContext::default())
                .await,
            Ok(Caller::ApiKey)
        );
        assert_eq!(
            auth.authenticate(None, Some("key-three"), &RequestContext::default())
                .await,
            Err(Unauthorized::BadApiKey)
        );
        assert_eq!(
            auth.authenticate(None, None, &RequestContext::default())
                .await,
            Err(Unauthorized::Missing)
        );
        assert!(matches!(
            auth.authenticate(Some("Bearer abc"), None, &RequestContext::default())
                .await,
            Err(Unauthorized::BadToken(_))
        ));
    }

    #[tokio::test]
    async fn a_made_token_is_accepted_with_its_subject_and_groups() {
        const SECRET: &str = "a-local-secret-of-at-least-32-bytes";
        let auth = Authenticator::from_config(&AuthConfig {
            jwt: vec![JwtConfig {
                keys: JwtKeys::Hs256Secret(SECRET.to_owned()),
                issuer: "local".to_owned(),
                audience: None,
                refetch_interval: DEFAULT_REFETCH_INTERVAL,
            }],
            ..AuthConfig::default()
        })
        .await
        .expect("valid")
        .expect("auth is on");
        let claims = TokenClaims {
            issuer: "local".to_owned(),
            audience: None,
            subject: "ann".to_owned(),
            groups: vec!["Admin".to_owned()],
            expires_in: std::time::Duration::from_secs(60),
        };
        let token = hs256_token(SECRET, &claims).expect("signed");
        let Ok(Caller::Token(verified)) = auth
            .authenticate(
                Some(&format!("Bearer {token}")),
                None,
                &RequestContext::default(),
            )
            .await
        else {
            panic!("the token is accepted");
        };
        assert_eq!(verified["sub"], "ann");
        assert_eq!(verified["cognito:groups"], serde_json::json!(["Admin"]));
        let other = hs256_token("another-secret-of-at-least-32-bytes!!", &claims).expect("signed");
        assert!(
            auth.authenticate(
                Some(&format!("Bearer {other}")),
                None,
                &RequestContext::default()
            )
            .await
            .is_err()
        );
    }

    #[tokio::test]
    async fn empty_keys_and_short_secrets_are_refused_at_start_up() {
        let empty = AuthConfig {
            api_keys: vec![" ".to_owned()],
            ..AuthConfig::default()
        };
        assert!(matches!(
            Authenticator::from_config(&empty).await,
            Err(AuthSetupError::EmptyApiKey)
        ));
        let weak = AuthConfig {
            api_keys: Vec::new(),
            jwt: vec![JwtConfig {
                keys: JwtKeys::Hs256Secret("short".to_owned()),
                issuer: "https://issuer.example".to_owned(),
                audience: None,
                refetch_interval: DEFAULT_REFETCH_INTERVAL,
            }],
            ..AuthConfig::default()
        };
        assert!(matches!(
            Authenticator::from_config(&weak).await,
            Err(AuthSetupError::WeakSecret)
        ));
    }

    #[test]
    fn a_jwt_is_found_with_bearer_or_without() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln";
        assert_eq!(jwt_in(jwt), Some(jwt));
        assert_eq!(jwt_in(&format!("Bearer {jwt}")), Some(jwt));
        assert_eq!(jwt_in(&format!("bearer  {jwt} ")), Some(jwt));
        assert_eq!(jwt_in(&format!("Basic {jwt}")), None);
        assert_eq!(jwt_in("north"), None);
        assert_eq!(jwt_in("eyJ.a"), None);
        assert_eq!(jwt_in("eyJ.a.b/c"), None);
    }
}
