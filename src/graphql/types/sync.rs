//! DataStore's sync query of a type that detects conflicts: `sync<Types>(filter, limit,
//! nextToken, lastSync): Model<Type>Connection`, whose pages carry `startedAt`.
//!
//! A sync here is always a base sync: the type's nodes through its type index, tombstones
//! included, in the list's order and under the caller's rules as its list is; `lastSync` is
//! read and checked, and a delta read of the changes since it is not made (every node comes
//! back, which DataStore reconciles by `_version`). `startedAt` is when the first page was
//! read, carried in `nextToken` (`<startedAt>.<cursor>`) so that every page of one sync
//! answers the same, as AppSync's do: changes made while a sync pages come in the next one.

use std::sync::Arc;

use async_graphql::Value;
use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, ResolverContext, TypeRef,
};

use super::amplify;
use super::connection::{filter_argument, note_filter_read, page_request};
use crate::engine::read::{Level, MAX_LIMIT, Page};
use crate::engine::{self, EngineError};
use crate::graphql::context::{model, scope};
use crate::graphql::errors::graphql_error;
use crate::graphql::selection::page_selection;
use crate::graphql::values::filters;
use crate::model::{ApiShape, ScalarType, TypeDef, amplify_plural};

/// The sync query of `type_def`, named as Amplify names it.
pub(in crate::graphql) fn sync_field(type_def: &TypeDef) -> Field {
    // Named by `pluralize` whatever `improvePluralization` says, as Amplify names it.
    let name = format!("sync{}", amplify_plural(&type_def.name));
    let type_def = Arc::new(type_def.clone());
    let filter_fields = Arc::new(filters::node_filter_fields(&type_def));
    let connection_type = amplify::connection_type(ApiShape::Amplify, &type_def.name);
    let filter_name = filters::page_filter_name(&type_def.name);
    let field = Field::new(name, TypeRef::named(connection_type), move |ctx| {
        let type_def = type_def.clone();
        let filter_fields = filter_fields.clone();
        FieldFuture::new(async move {
            let page = resolve_sync(&ctx, &type_def, &filter_fields)
                .await
                .map_err(|error| graphql_error(amplify::named_as_sent(ApiShape::Amplify, error)))?;
            Ok(Some(FieldValue::owned_any(page)))
        })
    })
    .description(
        "DataStore's sync: every node of the type, deleted ones (_deleted: true) included, a \
         page at a time; startedAt is the lastSync of the next sync.",
    )
    .argument(filter_argument(&filter_name));
    amplify::page_arguments(field).argument(
        InputValue::new("lastSync", TypeRef::named("AWSTimestamp"))
            .description("When the last sync started (its startedAt), in milliseconds."),
    )
}

async fn resolve_sync(
    ctx: &ResolverContext<'_>,
    type_def: &TypeDef,
    filter_fields: &[(String, ScalarType)],
) -> Result<Page, EngineError> {
    let model = model(ctx)?;
    let scope = scope(ctx)?;
    if let Some(last_sync) = ctx.args.get("lastSync").filter(|v| !v.is_null()) {
        last_sync
            .i64()
            .map_err(|_| EngineError::bad_input("lastSync must be milliseconds since the epoch"))?;
    }
    let (started_at, after) = match ctx.args.get("nextToken").filter(|v| !v.is_null()) {
        Some(token) => {
            let (started_at, after) = split_token(token.string()?)?;
            (started_at, Some(Value::from(after)))
        }
        None => (engine::sync::now_millis(), None),
    };
    let get = |name: &str| match name {
        "nextToken" => after.clone(),
        name => ctx.args.get(name).map(|v| v.as_value().clone()),
    };
    amplify::check_limit(ApiShape::Amplify, get)?;
    let key_field = engine::read::list_key_field(type_def);
    let request = page_request(
        key_field.as_ref(),
        Some(filter_fields),
        Some(MAX_LIMIT),
        |name| amplify::page_argument(ApiShape::Amplify, name, get),
    )?;
    let look_ahead = ctx.look_ahead();
    let selection = page_selection(ApiShape::Amplify, &look_ahead);
    let mut page = Level::new(scope, model)
        .list_page(type_def, &request, &selection)
        .await?;
    note_filter_read(ctx, scope, &page);
    page.started_at = Some(started_at);
    Ok(page)
}

/// A sync's `nextToken`: when its first page was read, and the cursor of where it goes on.
fn split_token(token: &str) -> Result<(i64, &str), EngineError> {
    token
        .split_once('.')
        .and_then(|(started_at, cursor)| Some((started_at.parse().ok()?, cursor)))
        .ok_or_else(|| EngineError::bad_input("nextToken is not one this sync query gave"))
}
