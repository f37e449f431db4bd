//! Amplify's face of the same pages: `Model<Type>Connection { items nextToken }` and the
//! arguments `limit` and `nextToken`, read into the engine's page request as `first` and
//! `after` are. Which face a connection shows is the model's [`ApiShape`]; the reads, cursors,
//! filters and rules behind both are one.
//!
//! `limit` defaults to 100, as Amplify's does, and a larger one (apps send `limit: 1000`) is
//! clamped to the largest page the server reads, not refused. `nextToken` is the page's end
//! cursor when more follow, else `null`.

use async_graphql::Value;
use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, TypeRef,
};

use crate::engine::Cursor;
use crate::engine::EngineError;
use crate::engine::read::{MAX_LIMIT, Page};
use crate::graphql::context::{cursor_value, scope};
use crate::model::ApiShape;

/// Amplify's page size when `limit` is not given.
const DEFAULT_LIMIT: usize = 100;

/// The name of the connection type of a page of `element` nodes in `shape`.
pub(in crate::graphql) fn connection_type(shape: ApiShape, element: &str) -> String {
    match shape {
        ApiShape::Relay => format!("{element}Connection"),
        ApiShape::Amplify => format!("Model{element}Connection"),
    }
}

/// `Model<Type>Connection`: the page's nodes as `items`, and `nextToken`; of a type that
/// detects conflicts (`synced`), `startedAt` too.
pub(in crate::graphql) fn connection_object(
    name: &str,
    node_type: &str,
    is_abstract: bool,
    synced: bool,
) -> Object {
    let object = Object::new(name)
        .field(Field::new(
            "items",
            TypeRef::named_list_nn(node_type),
            move |ctx| {
                let items = ctx.parent_value.downcast_ref::<Page>().map(|page| {
                    FieldValue::list(page.edges.iter().filter_map(|e| e.node.as_ref()).map(
                        |node| {
                            let value = FieldValue::borrowed_any(node);
                            if is_abstract {
                                value.with_type(node.typename.clone())
                            } else {
                                value
                            }
                        },
                    ))
                });
                FieldFuture::Value(items)
            },
        ))
        .field(
            Field::new("nextToken", TypeRef::named(TypeRef::STRING), |ctx| {
                let page = ctx.parent_value.downcast_ref::<Page>();
                let next = page
                    .filter(|page| page.has_next_page)
                    .and_then(|page| page.cursors().1);
                match page.and_then(|page| page.started_at) {
                    Some(started_at) => sync_next_token(&ctx, started_at, next),
                    None => cursor_value(&ctx, next),
                }
            })
            .description("Where the next page starts, or null after the last page."),
        );
    match synced {
        true => object.field(
            Field::new("startedAt", TypeRef::named("AWSTimestamp"), |ctx| {
                let page = ctx.parent_value.downcast_ref::<Page>();
                FieldFuture::from_value(page.and_then(|page| page.started_at).map(Value::from))
            })
            .description("Of a sync query: when its first page was read, in milliseconds since the epoch (the lastSync of the next sync); null on other pages."),
        ),
        false => object,
    }
}

/// `field` with Amplify's page arguments: `limit` and `nextToken`.
pub(in crate::graphql) fn page_arguments(field: Field) -> Field {
    field
        .argument(
            InputValue::new("limit", TypeRef::named(TypeRef::INT)).description(format!(
                "At most this many (100 when not given; more than {MAX_LIMIT} is read as {MAX_LIMIT}, and nextToken goes on)."
            )),
        )
        .argument(
            InputValue::new("nextToken", TypeRef::named(TypeRef::STRING))
                .description("Start where the page that answered this nextToken ended."),
        )
}

/// Reads a page's arguments in `shape` as the engine's names: Amplify's `limit` as `first`
/// (100 when not given, clamped to [`MAX_LIMIT`]), `nextToken` as `after`.
pub(in crate::graphql) fn page_argument(
    shape: ApiShape,
    name: &str,
    get: impl Fn(&str) -> Option<Value>,
) -> Option<Value> {
    match (shape, name) {
        (ApiShape::Relay, name) => get(name),
        (ApiShape::Amplify, "first") => match get("limit") {
            None | Some(Value::Null) => Some(Value::from(DEFAULT_LIMIT)),
            Some(Value::Number(n)) if n.as_i64().is_some_and(|n| n > MAX_LIMIT as i64) => {
                Some(Value::from(MAX_LIMIT))
            }
            other => other,
        },
        (ApiShape::Amplify, "after") => get("nextToken"),
        (ApiShape::Amplify, "last" | "before" | "limit" | "nextToken") => None,
        (ApiShape::Amplify, name) => get(name),
    }
}

/// Refuses a `limit` under 1, naming it (the engine's message would name `first`).
pub(in crate::graphql) fn check_limit(
    shape: ApiShape,
    get: impl Fn(&str) -> Option<Value>,
) -> Result<(), EngineError> {
    // DynamoDB (and so AppSync) refuses a page of nothing: its next token could not be told.
    match (shape, get("limit")) {
        (ApiShape::Amplify, Some(Value::Number(n))) if n.as_i64().is_none_or(|n| n < 1) => Err(
            EngineError::bad_input(format!("limit must be 1 or more, not {n}")),
        ),
        _ => Ok(()),
    }
}

/// `error` of a page's arguments naming the arguments the client sent: in Amplify's shape
/// `nextToken` and `limit`, where the engine names `after` and `first`.
pub(in crate::graphql) fn named_as_sent(shape: ApiShape, error: EngineError) -> EngineError {
    match (shape, error) {
        (ApiShape::Amplify, EngineError::BadUserInput(message)) => {
            let renamed = [("after", "nextToken"), ("first", "limit")]
                .iter()
                .find_map(|(engine, sent)| {
                    message
                        .strip_prefix(engine)
                        .filter(|rest| rest.starts_with([':', ' ']))
                        .map(|rest| format!("{sent}{rest}"))
                });
            EngineError::BadUserInput(renamed.unwrap_or(message))
        }
        (_, error) => error,
    }
}

/// The `nextToken` of a sync query's page: `<startedAt>.<cursor>` of a base sync,
/// `<startedAt>:<cursor>` of a delta sync (see `types::sync`), or null after the last page.
fn sync_next_token<'a>(
    ctx: &ResolverContext<'a>,
    started_at: i64,
    next: Option<&Cursor>,
) -> FieldFuture<'a> {
    let (Some(next), Ok(scope)) = (next, scope(ctx)) else {
        return cursor_value(ctx, next);
    };
    let separator = match crate::engine::read::is_delta_connection(&next.connection) {
        true => ':',
        false => '.',
    };
    let token = format!("{started_at}{separator}{}", next.encode(&scope.cursors));
    FieldFuture::from_value(Some(Value::from(token)))
}
