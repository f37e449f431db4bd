//! An issuer's keys served at a JWKS URL, found by OIDC discovery or given: fetched at
//! start-up, kept as long as the response's `Cache-Control: max-age` says (within bounds), and
//! fetched again when a token names a key the set lacks, at most once a minute (the refetch
//! interval), so that a flood of forged `kid`s cannot turn into a flood of requests to the
//! issuer.
//!
//! # Why not a JWKS crate
//!
//! The crates that fetch JWKS (`jwks`, `jwtk`, `openidconnect`) each bring their own JWT
//! verification or HTTP stack beside the `jsonwebtoken` and `reqwest` this server already
//! verifies and fetches with. What is left here is the cache policy: `reqwest` fetches,
//! `headers` parses `Cache-Control`, `jsonwebtoken` reads the keys.
//!
//! Invariant: a set that could not be fetched again keeps serving the keys it last had.

use std::sync::Arc;
use std::time::{Duration, Instant};

use headers::{CacheControl, HeaderMapExt as _};
use tokio::sync::{Mutex, RwLock};

use super::{AuthSetupError, VerifyingKey, parse_jwks};

/// The shortest and longest time keys are kept, whatever `Cache-Control` says.
const LEAST_KEPT: Duration = Duration::from_secs(60);
const MOST_KEPT: Duration = Duration::from_secs(24 * 60 * 60);
/// How long keys are kept when the response does not say.
const KEPT_UNLESS_TOLD: Duration = Duration::from_secs(60 * 60);
/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The keys served at one URL.
pub(super) struct RemoteKeys {
    url: String,
    /// Fetches made because of an unknown `kid` are at least this far apart.
    refetch_interval: Duration,
    client: reqwest::Client,
    cached: RwLock<Cached>,
    /// Held while fetching: one fetch at a time.
    fetching: Mutex<()>,
}

struct Cached {
    keys: Arc<Vec<VerifyingKey>>,
    fresh_until: Instant,
    fetched_at: Instant,
}

/// What OIDC discovery reads of the issuer's configuration.
#[derive(serde::Deserialize)]
struct Configuration {
    jwks_uri: String,
}

impl RemoteKeys {
    /// The keys at `url`, fetched now.
    pub(super) async fn fetch(
        url: String,
        refetch_interval: Duration,
    ) -> Result<RemoteKeys, AuthSetupError> {
        let client = client(&url)?;
        let (keys, fresh_for) =
            fetch_keys(&client, &url)
                .await
                .map_err(|reason| AuthSetupError::JwksUrl {
                    url: url.clone(),
                    reason,
                })?;
        let now = Instant::now();
        Ok(RemoteKeys {
            url,
            refetch_interval,
            client,
            cached: RwLock::new(Cached {
                keys: Arc::new(keys),
                fresh_until: now + fresh_for,
                fetched_at: now,
            }),
            fetching: Mutex::new(()),
        })
    }

    /// The keys at the `jwks_uri` of `issuer`'s OIDC configuration, fetched now.
    pub(super) async fn discover(
        issuer: &str,
        refetch_interval: Duration,
    ) -> Result<RemoteKeys, AuthSetupError> {
        let url = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let failed = |reason: String| AuthSetupError::JwksUrl {
            url: url.clone(),
            reason,
        };
        let response = client(&url)?
            .get(&url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| failed(e.to_string()))?;
        let configuration: Configuration = response
            .json()
            .await
            .map_err(|e| failed(format!("no jwks_uri in the configuration: {e}")))?;
        RemoteKeys::fetch(configuration.jwks_uri, refetch_interval).await
    }

    /// The keys as they are now: fetched again first when they are stale, unless a fetch is
    /// under way (then the stale keys serve meanwhile). A failed fetch keeps the keys there
    /// were, and is tried again a minute later.
    pub(super) async fn current(&self) -> Arc<Vec<VerifyingKey>> {
        let (keys, seen) = {
            let cached = self.cached.read().await;
            if Instant::now() < cached.fresh_until {
                return cached.keys.clone();
            }
            (cached.keys.clone(), cached.fetched_at)
        };
        match self.fetching.try_lock() {
            Ok(fetching) => self.fetch_again(fetching, seen).await,
            Err(_) => keys,
        }
    }

    /// The keys after a token named one the set lacks: fetched again, unless they were
    /// fetched less than a minute ago.
    pub(super) async fn after_unknown_key(&self) -> Arc<Vec<VerifyingKey>> {
        let fetched_at = {
            let cached = self.cached.read().await;
            if cached.fetched_at.elapsed() < self.refetch_interval {
                return cached.keys.clone();
            }
            cached.fetched_at
        };
        let fetching = self.fetching.lock().await;
        self.fetch_again(fetching, fetched_at).await
    }

    /// Fetches the keys again while `_fetching` is held, unless another caller did since
    /// `seen` (the fetch time it saw). Readers go on with the keys there are meanwhile.
    async fn fetch_again(
        &self,
        _fetching: tokio::sync::MutexGuard<'_, ()>,
        seen: Instant,
    ) -> Arc<Vec<VerifyingKey>> {
        {
            let cached = self.cached.read().await;
            if cached.fetched_at != seen {
                return cached.keys.clone();
            }
        }
        let now = Instant::now();
        let fetched = fetch_keys(&self.client, &self.url).await;
        let mut cached = self.cached.write().await;
        cached.fetched_at = now;
        match fetched {
            Ok((keys, fresh_for)) => {
                tracing::info!(url = %self.url, keys = keys.len(), "fetched the issuer's keys");
                cached.keys = Arc::new(keys);
                cached.fresh_until = now + fresh_for;
            }
            Err(reason) => {
                tracing::warn!(url = %self.url, %reason, "could not fetch the issuer's keys; keeping the ones there were");
                cached.fresh_until = now + LEAST_KEPT;
            }
        }
        cached.keys.clone()
    }
}

fn client(url: &str) -> Result<reqwest::Client, AuthSetupError> {
    reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .build()
        .map_err(|e| AuthSetupError::JwksUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })
}

/// The keys at `url`, and how long to keep them.
async fn fetch_keys(
    client: &reqwest::Client,
    url: &str,
) -> Result<(Vec<VerifyingKey>, Duration), String> {
    let response = client
        .get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| e.to_string())?;
    let fresh_for = kept_for(response.headers());
    let text = response.text().await.map_err(|e| e.to_string())?;
    let keys = parse_jwks(&text)?;
    Ok((keys, fresh_for))
}

/// How long a response's keys are kept: its `max-age`, within bounds; `no-cache` and
/// `no-store` as the least.
fn kept_for(headers: &reqwest::header::HeaderMap) -> Duration {
    let Some(control) = headers.typed_get::<CacheControl>() else {
        return KEPT_UNLESS_TOLD;
    };
    if control.no_cache() || control.no_store() {
        return LEAST_KEPT;
    }
    control
        .max_age()
        .unwrap_or(KEPT_UNLESS_TOLD)
        .clamp(LEAST_KEPT, MOST_KEPT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> reqwest::header::HeaderMap {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::CACHE_CONTROL,
            value.parse().expect("a header value"),
        );
        headers
    }

    #[test]
    fn keys_are_kept_as_long_as_cache_control_says_within_bounds() {
        assert_eq!(
            kept_for(&with("public, max-age=600")),
            Duration::from_secs(600)
        );
        assert_eq!(kept_for(&with("max-age=5")), LEAST_KEPT);
        assert_eq!(kept_for(&with("max-age=31536000")), MOST_KEPT);
        assert_eq!(kept_for(&with("no-store")), LEAST_KEPT);
        assert_eq!(
            kept_for(&reqwest::header::HeaderMap::new()),
            KEPT_UNLESS_TOLD
        );
    }
}
