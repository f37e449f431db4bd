//! B0, the HTTP ceiling: axum answering `POST /graphql` with a fixed JSON body, whatever the
//! request says.

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::post;

const BODY: &str = r#"{"data":{"__typename":"Query"}}"#;

async fn graphql() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], BODY)
}

#[tokio::main]
async fn main() {
    let address = tablegraph_bench_baselines::listen_address();
    let app = Router::new().route("/graphql", post(graphql));
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .expect("cannot bind the address");
    axum::serve(listener, app).await.expect("the server runs");
}
