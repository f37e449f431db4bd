//! DataStore's sync query of a type that detects conflicts: `sync<Types>(filter, limit,
//! nextToken, lastSync): Model<Type>Connection`, whose pages carry `startedAt`.
//!
//! Without `lastSync` (or with 0, or one older than the delta window, AppSync's
//! `DeltaSyncTableTTL`), a base sync: the type's nodes through its type index, tombstones
//! included, in the list's order and under the caller's rules as its list is. With a
//! `lastSync` within the window, a delta sync: the nodes written since, from the type's delta
//! record (`engine::read::DeltaStart`), never the type. `startedAt` is when the first page was
//! read, carried in `nextToken` (`<startedAt>.<cursor>` of a base sync, `<startedAt>:<cursor>`
//! of a delta one) so that every page of one sync answers the same, as AppSync's do: writes
//! made while a sync pages come in the next one.

use std::sync::Arc;

use async_graphql::Value;
use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, ResolverContext, TypeRef,
};

use super::amplify;
use super::connection::{filter_argument, note_filter_read, page_request_in};
use crate::engine::Cursor;
use crate::engine::read::{DeltaStart, Level, Page};
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
    let now = engine::sync::now_millis();
    let last_sync = match ctx.args.get("lastSync").filter(|v| !v.is_null()) {
        Some(value) => Some(value.i64().map_err(|_| {
            EngineError::bad_input("lastSync must be milliseconds since the epoch")
        })?),
        None => None,
    };
    let (started_at, read) = match ctx.args.get("nextToken").filter(|v| !v.is_null()) {
        Some(token) => split_token(token.string()?)?,
        // Within the delta window, the writes since; else (or with 0, DataStore's first
        // sync) the whole type.
        None => match last_sync {
            Some(since)
                if since > 0 && since >= now - model.dialect.conflict.delta_window_millis() =>
            {
                (now, SyncRead::Delta(Some(since), None))
            }
            _ => (now, SyncRead::Base(None)),
        },
    };
    let mut page = match read {
        SyncRead::Base(after) => base_page(ctx, type_def, filter_fields, after).await?,
        SyncRead::Delta(since, after) => {
            delta_page(ctx, type_def, filter_fields, since, after).await?
        }
    };
    page.started_at = Some(started_at);
    Ok(page)
}

/// What a sync's page reads: the type (a base sync) or its delta record, from the start or
/// from a cursor's position.
enum SyncRead<'t> {
    Base(Option<&'t str>),
    Delta(Option<i64>, Option<&'t str>),
}

/// A base sync's page: the type's list, tombstones included.
async fn base_page(
    ctx: &ResolverContext<'_>,
    type_def: &TypeDef,
    filter_fields: &[(String, ScalarType)],
    after: Option<&str>,
) -> Result<Page, EngineError> {
    let get = |name: &str| match name {
        "nextToken" => after.map(Value::from),
        name => ctx.args.get(name).map(|v| v.as_value().clone()),
    };
    let key_field = engine::read::list_key_field(type_def);
    let request = page_request_in(
        ApiShape::Amplify,
        key_field.as_ref(),
        Some(filter_fields),
        get,
    )?;
    let look_ahead = ctx.look_ahead();
    let selection = page_selection(ApiShape::Amplify, &look_ahead);
    let scope = scope(ctx)?;
    let page = Level::new(scope, model(ctx)?)
        .list_page(type_def, &request, &selection)
        .await?;
    note_filter_read(ctx, scope, &page);
    Ok(page)
}

/// A delta sync's page: the writes since `since` (the first page) or after the cursor `after`.
async fn delta_page(
    ctx: &ResolverContext<'_>,
    type_def: &TypeDef,
    filter_fields: &[(String, ScalarType)],
    since: Option<i64>,
    after: Option<&str>,
) -> Result<Page, EngineError> {
    let scope = scope(ctx)?;
    let start = match after {
        Some(after) => {
            let connection = engine::read::delta_connection(&type_def.name);
            let cursor = Cursor::decode_for(after, &connection, &scope.cursors)
                .map_err(|_| foreign_token())?;
            DeltaStart::After(cursor.sort_key)
        }
        None => DeltaStart::Since(since.unwrap_or(0)),
    };
    // `limit` and `filter` read as a list's are (the cursor is the delta's own, above).
    let get = |name: &str| match name {
        "nextToken" => None,
        name => ctx.args.get(name).map(|v| v.as_value().clone()),
    };
    let request = page_request_in(ApiShape::Amplify, None, Some(filter_fields), get)?;
    let filter = request.filter.map(|filter| filter.filter);
    let look_ahead = ctx.look_ahead();
    let selection = page_selection(ApiShape::Amplify, &look_ahead);
    Level::new(scope, model(ctx)?)
        .delta_page(
            type_def,
            (&start, request.size),
            filter.as_ref(),
            &selection,
        )
        .await
}

fn foreign_token() -> EngineError {
    EngineError::bad_input("nextToken is not one this sync query gave")
}

/// A sync's `nextToken`: when its first page was read, and where it goes on: `.` and a base
/// sync's cursor, or `:` and a delta sync's.
fn split_token(token: &str) -> Result<(i64, SyncRead<'_>), EngineError> {
    let at = token.find(['.', ':']).ok_or_else(foreign_token)?;
    let started_at = token[..at].parse().map_err(|_| foreign_token())?;
    let cursor = &token[at + 1..];
    match &token[at..=at] {
        "." => Ok((started_at, SyncRead::Base(Some(cursor)))),
        _ => Ok((started_at, SyncRead::Delta(None, Some(cursor)))),
    }
}
