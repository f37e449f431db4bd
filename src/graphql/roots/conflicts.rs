//! AppSync's `LAMBDA` conflict handler: a write to a type whose `transform.conf.json` names
//! one (`LambdaConflictHandler.name`), refused by the engine for a stale `_version`, is handed
//! to that function (`--function NAME=URL`, or `lambda:` through the Lambda API) with AppSync's
//! event, `{ newItem, existingItem, arguments, resolver, identity }`. Its answer decides:
//! `RESOLVE` writes its `item` on the stored version, `REJECT` refuses the write as
//! `ConflictUnhandled` with the stored node, and `REMOVE` deletes the node (a tombstone). A
//! function that fails, or answers anything else, is AppSync's `ConflictError`.

use std::sync::Arc;

use async_graphql::dynamic::ResolverContext;
use serde_json::{Value as Json, json};

use crate::auth::Caller;
use crate::engine::read::{Filter, Node};
use crate::engine::write::{FieldValues, Guard};
use crate::engine::{self, EngineError, Item};
use crate::functions::Functions;
use crate::graphql::context::{model, scope};
use crate::graphql::types::own_fields::{arguments_of, identity};
use crate::model::{ConflictHandler, FieldKind, TypeDef};

/// The write a LAMBDA conflict handler decides on.
pub(super) enum Conflicted<'a> {
    /// An update of node `id` with these fields.
    Update(&'a str, &'a FieldValues),
    /// A delete of node `id`.
    Delete(&'a str),
}

/// `error`, or, where it is a conflict that `type_def`'s LAMBDA handler decides, what the
/// handler made of `write`: the node written or deleted.
pub(super) async fn decided(
    ctx: &ResolverContext<'_>,
    type_def: &TypeDef,
    (write, condition): (Conflicted<'_>, &Option<Filter>),
    error: EngineError,
) -> Result<Option<Node>, EngineError> {
    let (Some(ConflictHandler::Lambda(function)), EngineError::ConflictRejected(current)) =
        (&type_def.conflict, &error)
    else {
        return Err(error);
    };
    // A deleted node takes no more writes, whatever a handler would say.
    if current.is_tombstone() {
        return Err(error);
    }
    let answer = ask(ctx, function, current, &write).await?;
    // On the stored version, and still under the client's condition.
    let version = Guard::version(Some(version_of(current))).with_condition(condition.clone());
    let (scope, model) = (scope(ctx)?, model(ctx)?);
    match (answer["action"].as_str(), write) {
        (Some("REJECT"), _) => Err(error),
        (Some("RESOLVE"), Conflicted::Update(id, _)) => {
            let fields = resolved_fields(type_def, &answer["item"])?;
            engine::write::update_node(scope, model, type_def, id, &fields, &version)
                .await
                .map(Some)
        }
        (Some("REMOVE"), Conflicted::Update(id, _) | Conflicted::Delete(id))
        | (Some("RESOLVE"), Conflicted::Delete(id)) => {
            engine::write::delete_node(scope, model, type_def, id, &version).await
        }
        (action, _) => Err(EngineError::ConflictError(format!(
            "the conflict handler {function} answered action {}: RESOLVE, REJECT or REMOVE",
            action.unwrap_or("(none)")
        ))),
    }
}

/// The handler's answer to AppSync's event for `write` against `current`.
async fn ask(
    ctx: &ResolverContext<'_>,
    function: &str,
    current: &Item,
    write: &Conflicted<'_>,
) -> Result<Json, EngineError> {
    let functions = ctx
        .data::<Arc<Functions>>()
        .map_err(|_| EngineError::ConflictError("no functions are configured".to_owned()))?;
    let existing = item_json(current);
    let new_item = match write {
        Conflicted::Update(_, fields) => {
            let mut new_item = existing.clone();
            for (name, value) in fields.iter() {
                let value = value
                    .as_ref()
                    .map_or(Json::Null, engine::value_to_plain_json);
                new_item[name] = value;
            }
            new_item
        }
        Conflicted::Delete(_) => Json::Null,
    };
    let event = json!({
        "newItem": new_item,
        "existingItem": existing,
        "arguments": arguments_of(ctx),
        "resolver": ctx.field().name(),
        "identity": identity(ctx.data_opt::<Caller>()),
    });
    functions.call(None, function, event).await.map_err(|e| {
        EngineError::ConflictError(format!(
            "the conflict handler {function} failed: {}",
            e.message
        ))
    })
}

/// A stored node as the handler reads it: its attributes as plain JSON, its keys left out.
fn item_json(item: &Item) -> Json {
    let mut object = serde_json::Map::new();
    for (name, value) in item.iter() {
        if name != "PK" && name != "SK" && !name.starts_with("GSI") {
            object.insert(name.clone(), engine::value_to_plain_json(value));
        }
    }
    object.insert(engine::SYNC_VERSION.to_owned(), json!(version_of(item)));
    Json::Object(object)
}

fn version_of(item: &Item) -> i64 {
    engine::sync::stored_version(item)
}

/// The fields of `type_def` a `RESOLVE` answer's item gives.
fn resolved_fields(type_def: &TypeDef, item: &Json) -> Result<FieldValues, EngineError> {
    let object = item.as_object().ok_or_else(|| {
        EngineError::ConflictError("a RESOLVE answer needs the item to write".to_owned())
    })?;
    Ok(type_def
        .fields
        .iter()
        .filter(|field| {
            field.scalar().is_some() || matches!(field.kind, FieldKind::ScalarList { .. })
        })
        .filter_map(|field| {
            let value = match object.get(&field.name)? {
                Json::Null => None,
                value => Some(engine::value_from_plain_json(value.clone())),
            };
            Some((field.name.clone(), value))
        })
        .collect())
}
