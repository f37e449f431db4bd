//! The fields a Lambda authorizer denied its caller (`deniedFields`): each such field answers
//! `null` with AppSync's `Unauthorized` error, whatever resolves it, and nothing below it runs.
//!
//! # Why an extension
//!
//! A denied field may be any field of the schema (generated, a function's, a relation), and
//! only the request's caller says which: an extension sees every field with its parent type
//! before its resolver runs. It is installed only when a Lambda authorizer is configured, so
//! other servers pay nothing for it.

use std::sync::Arc;

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextResolve, ResolveInfo,
};
use async_graphql::{ServerResult, Value};

use crate::auth::Caller;

pub(in crate::graphql) struct DeniedFields;

impl ExtensionFactory for DeniedFields {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(DeniedFields)
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for DeniedFields {
    async fn resolve(
        &self,
        ctx: &ExtensionContext<'_>,
        info: ResolveInfo<'_>,
        next: NextResolve<'_>,
    ) -> ServerResult<Option<Value>> {
        if let Some(Caller::Lambda(admitted)) = ctx.data_opt::<Caller>()
            && admitted.denies(info.parent_type, info.name)
        {
            let message = format!(
                "Not Authorized to access {} on type {}",
                info.name, info.parent_type
            );
            let error = super::typed_error(message, "Unauthorized");
            // Its path is set by `field_errors`, the outer extension; no location is known here.
            let mut error = error.into_server_error(async_graphql::Pos::default());
            error.locations.clear();
            return Err(error);
        }
        next.run(ctx, info).await
    }
}
