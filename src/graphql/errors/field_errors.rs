//! Field errors as GraphQL answers them: the field that failed is `null`, its error carries the
//! field's `path`, and a `null` in a non-null position makes the nearest nullable ancestor
//! `null` instead (the spec's "handling field errors"). The rest of the answer, and every
//! mutation field that already ran, stays in `data`.
//!
//! Invariant: every error raised while a request runs carries a path, so the HTTP layer can
//! tell it from a request error (no path, no `data`, nothing ran).
//!
//! # Why an extension
//!
//! async-graphql's dynamic schema (7.0) turns an error of any field into an error of the whole
//! request: its object resolution joins the fields with `try_join_all` (serially for
//! mutations) and the error bubbles to the root without a path, so the answer had no `data`
//! even after a mutation field had committed. An extension sees every field and list item
//! with its path and declared type, which is what the spec's rule needs.

use std::sync::{Arc, Mutex};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextExecute, NextResolve, ResolveInfo,
};
use async_graphql::{PathSegment, QueryPathSegment, Response, ServerError, ServerResult, Value};

pub(in crate::graphql) struct FieldErrors;

impl ExtensionFactory for FieldErrors {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(RequestFieldErrors::default())
    }
}

/// The errors of one request's fields that ended in a `null`, until the answer is made.
#[derive(Default)]
struct RequestFieldErrors {
    errors: Mutex<Vec<ServerError>>,
}

#[async_graphql::async_trait::async_trait]
impl Extension for RequestFieldErrors {
    async fn execute(
        &self,
        ctx: &ExtensionContext<'_>,
        operation_name: Option<&str>,
        next: NextExecute<'_>,
    ) -> Response {
        let mut response = next.run(ctx, operation_name).await;
        let caught = std::mem::take(
            &mut *self
                .errors
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        response.errors.extend(caught);
        response
    }

    async fn resolve(
        &self,
        ctx: &ExtensionContext<'_>,
        info: ResolveInfo<'_>,
        next: NextResolve<'_>,
    ) -> ServerResult<Option<Value>> {
        let nullable = !info.return_type.ends_with('!');
        let list = info.return_type.starts_with('[');
        let path_node = info.path_node;
        let mut error = match next.run(ctx, info).await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        // Where it was raised; an error bubbling up from a non-null child keeps the child's.
        if error.path.is_empty() {
            error.path = std::iter::once(path_node)
                .chain(path_node.parents())
                .map(|node| match node.segment {
                    QueryPathSegment::Name(name) => PathSegment::Field(name.to_owned()),
                    QueryPathSegment::Index(index) => PathSegment::Index(index),
                })
                .collect();
            error.path.reverse();
            // A batch member's error points at the member's place in the list it would have
            // filled (`["createFarms", 2]`), as its `extensions.index` does.
            let member = error
                .extensions
                .as_ref()
                .and_then(|extensions| extensions.get("index"))
                .and_then(|index| match index {
                    Value::Number(index) => index.as_u64(),
                    _ => None,
                });
            if let Some(index) = member.filter(|_| list) {
                error.path.push(PathSegment::Index(index as usize));
            }
        }
        if !nullable {
            return Err(error);
        }
        self.errors
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(error);
        Ok(None)
    }
}
