//! B1, the GraphQL ceiling: a static async-graphql schema (`{ hello }`) behind axum and the
//! tower-http layers tablegraph runs (`tablegraph_bench_baselines::serve_graphql`). So
//! tablegraph's W0 against B1 compares the GraphQL work, not the middleware.

use async_graphql::{EmptyMutation, EmptySubscription, Object, Schema};

struct Query;

#[Object]
impl Query {
    async fn hello(&self) -> String {
        "world".to_owned()
    }
}

#[tokio::main]
async fn main() {
    let address = tablegraph_bench_baselines::listen_address();
    let schema = Schema::new(Query, EmptyMutation, EmptySubscription);
    let prepare = std::sync::Arc::new(|request| request);
    tablegraph_bench_baselines::serve_graphql(schema, prepare, address).await;
}
