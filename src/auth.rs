//! Who may call `/graphql`: AppSync's API keys and JWT bearer tokens (OIDC-style), for a
//! self-hosted server.
//!
//! With neither configured, the API is open. Otherwise every GraphQL request needs one valid
//! credential: an `Authorization: Bearer <jwt>` header when tokens are configured (it takes
//! precedence when present), or an `x-api-key` header naming one of the configured keys. A
//! missing or invalid credential answers 401 before any GraphQL runs. Health, readiness,
//! metrics and the GraphiQL page itself stay open; the page lets the user set the header.
//!
//! A verified token's claims travel with the request as a [`Caller`], for resolvers.

use std::path::PathBuf;

use jsonwebtoken::jwk::JwkSet;
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
    pub jwt: Option<JwtConfig>,
}

#[derive(Debug, Clone)]
pub struct JwtConfig {
    pub keys: JwtKeys,
    /// The `iss` every token must carry.
    pub issuer: String,
    /// When set, the `aud` every token must include.
    pub audience: Option<String>,
}

/// Where token signatures are checked against.
#[derive(Debug, Clone)]
pub enum JwtKeys {
    /// A JWKS document (RS256/ES256/… keys, chosen by the token's `kid`), read at start-up.
    JwksFile(PathBuf),
    /// A shared HS256 secret.
    Hs256Secret(String),
}

/// The configuration could not be turned into a verifier.
#[derive(Debug, thiserror::Error)]
pub enum AuthSetupError {
    #[error("cannot read the JWKS file {path}: {reason}")]
    Jwks { path: PathBuf, reason: String },
    #[error("an API key must not be empty")]
    EmptyApiKey,
    #[error("the HS256 secret must be at least 32 bytes")]
    WeakSecret,
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
}

impl Caller {
    /// A claim of a verified token (`sub`, `email`, custom claims); `None` otherwise.
    pub fn claim(&self, name: &str) -> Option<&serde_json::Value> {
        match self {
            Caller::Token(claims) => claims.get(name),
            _ => None,
        }
    }
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
}

/// Checks credentials; built once at start-up.
pub struct Authenticator {
    api_keys: Vec<String>,
    jwt: Option<JwtVerifier>,
}

struct JwtVerifier {
    keys: Vec<VerifyingKey>,
    issuer: String,
    audience: Option<String>,
}

struct VerifyingKey {
    kid: Option<String>,
    algorithm: Algorithm,
    key: DecodingKey,
}

impl Authenticator {
    /// `None` when nothing is configured: the API is open.
    pub fn from_config(config: &AuthConfig) -> Result<Option<Authenticator>, AuthSetupError> {
        if config.api_keys.is_empty() && config.jwt.is_none() {
            return Ok(None);
        }
        if config.api_keys.iter().any(|key| key.trim().is_empty()) {
            return Err(AuthSetupError::EmptyApiKey);
        }
        let jwt = config.jwt.as_ref().map(JwtVerifier::new).transpose()?;
        Ok(Some(Authenticator {
            api_keys: config.api_keys.clone(),
            jwt,
        }))
    }

    /// Whether a 401 should invite a bearer token.
    pub fn accepts_tokens(&self) -> bool {
        self.jwt.is_some()
    }

    /// Checks a request's `Authorization` and `x-api-key` header values.
    pub fn authenticate(
        &self,
        authorization: Option<&str>,
        api_key: Option<&str>,
    ) -> Result<Caller, Unauthorized> {
        let bearer = authorization.and_then(|value| {
            let (scheme, token) = value.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
        if let (Some(token), Some(jwt)) = (bearer, &self.jwt) {
            return jwt.verify(token).map(Caller::Token);
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

impl JwtVerifier {
    fn new(config: &JwtConfig) -> Result<JwtVerifier, AuthSetupError> {
        let keys = match &config.keys {
            JwtKeys::Hs256Secret(secret) => {
                if secret.len() < 32 {
                    return Err(AuthSetupError::WeakSecret);
                }
                vec![VerifyingKey {
                    kid: None,
                    algorithm: Algorithm::HS256,
                    key: DecodingKey::from_secret(secret.as_bytes()),
                }]
            }
            JwtKeys::JwksFile(path) => read_jwks(path)?,
        };
        Ok(JwtVerifier {
            keys,
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
        })
    }

    fn verify(
        &self,
        token: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>, Unauthorized> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Unauthorized::BadToken("it is not a JWT"))?;
        // A token without `kid` may be signed by any key of its algorithm: each is tried.
        let mut candidates = self
            .keys
            .iter()
            .filter(|key| {
                key.algorithm == header.alg
                    && (header.kid.is_none() || key.kid.is_none() || key.kid == header.kid)
            })
            .peekable();
        if candidates.peek().is_none() {
            return Err(Unauthorized::BadToken("it is not signed by a known key"));
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = CLOCK_SKEW_SECS;
        validation.set_issuer(&[&self.issuer]);
        match &self.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                validation.set_required_spec_claims(&["exp", "iss", "aud"]);
            }
            None => {
                validation.validate_aud = false;
                validation.set_required_spec_claims(&["exp", "iss"]);
            }
        }
        validation.validate_nbf = true;
        use jsonwebtoken::errors::ErrorKind;
        let mut failure = ErrorKind::InvalidSignature;
        for key in candidates {
            match jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
                token,
                &key.key,
                &validation,
            ) {
                Ok(data) => return Ok(data.claims),
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

fn read_jwks(path: &std::path::Path) -> Result<Vec<VerifyingKey>, AuthSetupError> {
    let error = |reason: String| AuthSetupError::Jwks {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
    let set: JwkSet = serde_json::from_str(&text).map_err(|e| error(e.to_string()))?;
    let mut keys = Vec::with_capacity(set.keys.len());
    for jwk in &set.keys {
        let key = DecodingKey::from_jwk(jwk).map_err(|e| error(e.to_string()))?;
        let algorithm = match jwk.common.key_algorithm {
            Some(algorithm) => Algorithm::try_from(algorithm).map_err(|e| error(e.to_string()))?,
            None => match &jwk.algorithm {
                jsonwebtoken::jwk::AlgorithmParameters::RSA(_) => Algorithm::RS256,
                jsonwebtoken::jwk::AlgorithmParameters::EllipticCurve(_) => Algorithm::ES256,
                _ => return Err(error("a key without \"alg\" must be RSA or EC".to_owned())),
            },
        };
        keys.push(VerifyingKey {
            kid: jwk.common.key_id.clone(),
            algorithm,
            key,
        });
    }
    if keys.is_empty() {
        return Err(error("it has no keys".to_owned()));
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_only(keys: &[&str]) -> Authenticator {
        Authenticator::from_config(&AuthConfig {
            api_keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            jwt: None,
        })
        .expect("valid configuration")
        .expect("auth is on")
    }

    #[test]
    fn no_configuration_means_an_open_api() {
        assert!(
            Authenticator::from_config(&AuthConfig::default())
                .expect("valid")
                .is_none()
        );
    }

    #[test]
    fn any_configured_api_key_passes_and_others_do_not() {
        let auth = keys_only(&["key-one", "key-two"]);
        assert_eq!(auth.authenticate(None, Some("key-two")), Ok(Caller::ApiKey));
        assert_eq!(
            auth.authenticate(None, Some("key-three")),
            Err(Unauthorized::BadApiKey)
        );
        assert_eq!(auth.authenticate(None, None), Err(Unauthorized::Missing));
        assert!(matches!(
            auth.authenticate(Some("Bearer abc"), None),
            Err(Unauthorized::BadToken(_))
        ));
    }

    #[test]
    fn empty_keys_and_short_secrets_are_refused_at_start_up() {
        let empty = AuthConfig {
            api_keys: vec![" ".to_owned()],
            jwt: None,
        };
        assert!(matches!(
            Authenticator::from_config(&empty),
            Err(AuthSetupError::EmptyApiKey)
        ));
        let weak = AuthConfig {
            api_keys: Vec::new(),
            jwt: Some(JwtConfig {
                keys: JwtKeys::Hs256Secret("short".to_owned()),
                issuer: "https://issuer.example".to_owned(),
                audience: None,
            }),
        };
        assert!(matches!(
            Authenticator::from_config(&weak),
            Err(AuthSetupError::WeakSecret)
        ));
    }
}
