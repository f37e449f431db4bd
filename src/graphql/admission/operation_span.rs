//! Names a request's span after the GraphQL operation it runs (`query FarmPage`), for exported
//! traces: the HTTP layer opens the span before the document is read. Added to the schema only
//! while traces are exported (see `telemetry`).

use std::sync::{Arc, Mutex};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextExecute, NextParseQuery,
};
use async_graphql::parser::types::{DocumentOperations, ExecutableDocument, OperationType};
use async_graphql::{Response, ServerResult, Variables};

pub(in crate::graphql) struct OperationSpan;

impl ExtensionFactory for OperationSpan {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(RequestOperations::default())
    }
}

/// The operations of one request's document, by name, until the one that runs is chosen.
#[derive(Default)]
struct RequestOperations {
    operations: Mutex<Vec<(Option<String>, OperationType)>>,
}

#[async_graphql::async_trait::async_trait]
impl Extension for RequestOperations {
    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        let document = next.run(ctx, query, variables).await?;
        let operations = match &document.operations {
            DocumentOperations::Single(operation) => vec![(None, operation.node.ty)],
            DocumentOperations::Multiple(operations) => operations
                .iter()
                .map(|(name, operation)| (Some(name.to_string()), operation.node.ty))
                .collect(),
        };
        *self
            .operations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = operations;
        Ok(document)
    }

    async fn execute(
        &self,
        ctx: &ExtensionContext<'_>,
        operation_name: Option<&str>,
        next: NextExecute<'_>,
    ) -> Response {
        let chosen = {
            let operations = self
                .operations
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match operations.as_slice() {
                [(None, ty)] => Some((operation_name.map(str::to_owned), *ty)),
                named => named
                    .iter()
                    .find(|(name, _)| name.as_deref() == operation_name)
                    .map(|(name, ty)| (name.clone(), *ty)),
            }
        };
        if let Some((name, ty)) = chosen {
            let ty = match ty {
                OperationType::Query => "query",
                OperationType::Mutation => "mutation",
                OperationType::Subscription => "subscription",
            };
            let span = tracing::Span::current();
            span.record("graphql.operation.type", ty);
            match &name {
                Some(name) => {
                    span.record("graphql.operation.name", name.as_str());
                    crate::telemetry::rename_span(&span, format!("{ty} {name}"));
                }
                None => crate::telemetry::rename_span(&span, ty.to_owned()),
            }
        }
        next.run(ctx, operation_name).await
    }
}
