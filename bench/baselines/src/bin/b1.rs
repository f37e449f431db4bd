//! B1, the GraphQL ceiling: a static async-graphql schema (`{ hello }`) behind axum. The body is
//! deserialized as an `async_graphql::Request`, executed, and the `Response` serialized; no
//! other layer.

use async_graphql::{EmptyMutation, EmptySubscription, Object, Schema};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::post;

struct Query;

#[Object]
impl Query {
    async fn hello(&self) -> String {
        "world".to_owned()
    }
}

type HelloSchema = Schema<Query, EmptyMutation, EmptySubscription>;

async fn graphql(State(schema): State<HelloSchema>, body: Bytes) -> Response {
    let request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let response = schema.execute(request).await;
    match serde_json::to_vec(&response) {
        Ok(json) => ([(CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

#[tokio::main]
async fn main() {
    let address = tablegraph_bench_baselines::listen_address();
    let schema = Schema::new(Query, EmptyMutation, EmptySubscription);
    let app = Router::new()
        .route("/graphql", post(graphql))
        .with_state(schema);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .expect("cannot bind the address");
    axum::serve(listener, app).await.expect("the server runs");
}
