//! What every handler shares, built once at start-up: the API, the store, credentials, the
//! request metrics and the GraphiQL page.

use std::sync::Arc;

use crate::auth::Authenticator;
use crate::config::HttpConfig;
use crate::graphql::Api;
use crate::store::Store;

use super::metrics::HttpMetrics;

/// The header a client sets to get the storage calls of its request in `extensions`.
pub const STORAGE_CALLS_HEADER: &str = "x-tablegraph-storage-calls";

/// What every handler shares; built once at start-up.
#[derive(Clone)]
pub struct AppState {
    pub(super) inner: Arc<StateInner>,
}

pub(super) struct StateInner {
    pub(super) api: Api,
    pub(super) store: Store,
    pub(super) auth: Option<Arc<Authenticator>>,
    pub(super) metrics: HttpMetrics,
    pub(super) graphiql: Option<String>,
    pub(super) expose_storage_calls: bool,
    pub(super) max_storage_calls: usize,
}

impl AppState {
    pub fn new(
        api: Api,
        store: Store,
        auth: Option<Authenticator>,
        config: &HttpConfig,
    ) -> AppState {
        let graphiql = config
            .graphiql
            .then(|| graphiql_page(!config.auth.api_keys.is_empty()));
        AppState {
            inner: Arc::new(StateInner {
                api,
                store,
                auth: auth.map(Arc::new),
                metrics: HttpMetrics::new(&ROUTES),
                graphiql,
                expose_storage_calls: config.expose_storage_calls,
                max_storage_calls: config.graphql.max_storage_calls,
            }),
        }
    }
}

/// GraphiQL, with the headers editor open and an empty `x-api-key` to fill in when the API
/// needs one (kept in the browser's storage between visits).
fn graphiql_page(needs_api_key: bool) -> String {
    let page = async_graphql::http::GraphiQLSource::build()
        .endpoint("/graphql")
        .title("tablegraph")
        .finish();
    if !needs_api_key {
        return page;
    }
    page.replacen(
        "defaultEditorToolsVisibility: true,",
        r#"defaultEditorToolsVisibility: "headers",
          defaultHeaders: '{ "x-api-key": "" }',
          shouldPersistHeaders: true,"#,
        1,
    )
}

/// The paths the router serves.
pub(super) const ROUTES: [&str; 4] = ["/graphql", "/healthz", "/readyz", "/metrics"];
