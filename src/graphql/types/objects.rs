//! The object type of each `@model` type: its stored fields, `@belongsTo` nodes, connections,
//! `@targets` lists, fields served by resolver files, and `createdAt`/`updatedAt`/`version`.

use std::sync::Arc;

use async_graphql::dynamic::{Field, FieldFuture, Object, TypeRef};

use super::connection;
use super::custom;
use super::embedded;
use super::fields::{stored_field, stored_list_field};
use super::own_fields;
use super::targets;
use crate::engine;
use crate::engine::AttrValue;
use crate::engine::read::Node;
use crate::engine::{DELETED, LAST_CHANGED_AT, SYNC_VERSION};
use crate::graphql::context::{self, FieldGuard, node_field_value, possible_types};
use crate::graphql::errors::graphql_error;
use crate::graphql::selection::selection;
use crate::graphql::values::scalars::{list_type_ref, scalar_type_ref};
use crate::graphql::values::{list_to_graphql, to_graphql};
use crate::model::{FieldDef, FieldKind, Model, ScalarType, TypeDef};
use crate::resolvers::Resolvers;

pub(in crate::graphql) fn object(
    type_def: &TypeDef,
    model: &Arc<Model>,
    resolvers: &Resolvers,
) -> Object {
    let mut object = Object::new(&type_def.name);
    if model.dialect.additions() {
        object = object.implement("Node");
    }
    for interface in &type_def.implements {
        object = object.implement(interface);
    }
    if let Some(description) = &type_def.description {
        object = object.description(description);
    }
    for field in served_order(type_def, model) {
        let field = match field {
            Served::Sync => {
                object = sync_fields(object);
                continue;
            }
            Served::Field(field) => generated_field(type_def, field, model, resolvers),
            // `id: ID` as the schema declares it, where the `Node` interface does not need `ID!`.
            Served::Id => stored_field(
                "id",
                ScalarType::Id,
                !type_def.id_is_optional || model.dialect.additions(),
            ),
            Served::Time(name, scalar, required) => {
                let description = match type_def.timestamps.created.as_deref() == Some(name) {
                    true => "When the node was created.",
                    false => "When the node was last changed.",
                };
                stored_field(name, scalar, required).description(description)
            }
        };
        object = object.field(field);
    }
    // A type that detects conflicts serves its version as `_version` (above).
    if type_def.conflict.is_some() {
        return object;
    }
    // A type with a `version` field of its own serves it, and its node's version stays unread.
    if !model.dialect.additions() || type_def.field("version").is_some() {
        return object;
    }
    object
        .field(
            stored_field("version", ScalarType::Int, true)
                .description("Starts at 1 and grows with every update; pass it as `expectedVersion` to update only what you read."),
        )
}

/// The fields of a type that detects conflicts, as Amplify names them: `_version` (the
/// node's version), `_deleted` (true on a tombstone) and `_lastChangedAt` (milliseconds).
fn sync_fields(object: Object) -> Object {
    let version = Field::new(SYNC_VERSION, TypeRef::named_nn(TypeRef::INT), |ctx| {
        let node = ctx.parent_value.downcast_ref::<Node>();
        FieldFuture::from_value(node.and_then(|node| {
            to_graphql(
                node.item.get(node.item.version_attribute()),
                &ScalarType::Int,
            )
        }))
    });
    let changed = Field::new(LAST_CHANGED_AT, TypeRef::named_nn("AWSTimestamp"), |ctx| {
        let node = ctx.parent_value.downcast_ref::<Node>();
        FieldFuture::from_value(
            node.map(|node| async_graphql::Value::from(engine::last_changed_at(&node.item))),
        )
    });
    object
        .field(
            version.description("The node's version: it starts at 1 and grows with every write."),
        )
        .field(
            stored_field(DELETED, ScalarType::Boolean, false).description(
                "True once the node is deleted (a tombstone, kept for the sync queries).",
            ),
        )
        .field(
            changed.description("When the node was last written, in milliseconds since the epoch."),
        )
}

/// A field of a type's object: one of its fields, or one of its times (its type, required).
enum Served<'t> {
    Id,
    /// Conflict detection's `_version`, `_deleted` and `_lastChangedAt`.
    Sync,
    Field(&'t FieldDef),
    Time(&'t str, ScalarType, bool),
}

/// The fields of `type_def`'s object in the order Amplify's transformer declares them (which
/// the statements `amplify codegen` generates follow): the declared fields with `id` and the
/// times where the schema declares them, then `id` if it does not, the other times (with
/// conflict detection's fields before them in v1, after them in v2), the keys relations imply,
/// the fields rules add. Tablegraph's own API serves `id` first.
fn served_order<'t>(type_def: &'t TypeDef, model: &Model) -> Vec<Served<'t>> {
    let times = &type_def.timestamps;
    let amplify = model.dialect.amplify_shape();
    let later = |field: &FieldDef| {
        amplify && (type_def.implied.contains(&field.name) || type_def.added.contains(&field.name))
    };
    let time = |name: &'t str| match times.declared(name) {
        Some(how) if amplify => Served::Time(name, how.scalar(), how.required),
        _ => Served::Time(name, ScalarType::AwsDateTime, true),
    };
    let all_times: Vec<&str> = [&times.created, &times.updated]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let declared_at = |name: &str| {
        times
            .declared(name)
            .filter(|_| amplify)
            .map(|how| how.position)
    };
    let id_at = match amplify {
        true => type_def.id_at,
        false => Some(0),
    };
    // With conflict detection, v1 leaves a relation where the schema declares it unless its
    // target's rules limit who reads it (seen in the transformer's output for the fixtures'
    // DataStore apps).
    let stays = |field: &FieldDef| type_def.conflict.is_some() && !v1_read_ruled(field, model);
    let moved =
        |field: &FieldDef| model.dialect.v1_api() && v1_moves(field, model) && !stays(field);
    let declared: Vec<&FieldDef> = type_def
        .fields
        .iter()
        .filter(|f| !later(f) && !moved(f))
        .collect();
    // Where `id` and each declared time go: before the declared field of that position, or
    // after the last (positions past it come to there).
    let at = |position: Option<usize>| position.map(|p| p.min(declared.len()));
    let mut order = Vec::new();
    for position in 0..=declared.len() {
        if at(id_at) == Some(position) {
            order.push(Served::Id);
        }
        let times_here = all_times
            .iter()
            .filter(|t| at(declared_at(t)) == Some(position));
        order.extend(times_here.map(|t| time(t)));
        if let Some(field) = declared.get(position) {
            order.push(Served::Field(field));
        }
    }
    if id_at.is_none() {
        order.push(Served::Id);
    }
    // A type keyed by a field of its own has no `id` in Amplify's API (tablegraph's node id
    // is its key's value): served only as one of tablegraph's additions.
    if amplify && type_def.primary_key.is_some() && !model.dialect.additions() {
        order.retain(|served| !matches!(served, Served::Id));
    }
    // Conflict detection's fields: v1 adds them before the times it adds, v2 after.
    let synced = amplify && type_def.conflict.is_some();
    let v1 = model.dialect.v1_api();
    if synced && v1 {
        order.push(Served::Sync);
    }
    let undeclared_times = all_times.iter().filter(|t| declared_at(t).is_none());
    order.extend(undeclared_times.map(|t| time(t)));
    if synced && !v1 {
        order.push(Served::Sync);
    }
    let implied = type_def
        .fields
        .iter()
        .filter(|f| later(f) && type_def.implied.contains(&f.name));
    let added = type_def
        .fields
        .iter()
        .filter(|f| later(f) && !type_def.implied.contains(&f.name));
    // Transformer v1 keeps the keys relations imply out of the type (they are in its inputs),
    // and adds an owner field only as `owner`, for its subscriptions' arguments.
    let implied = implied.filter(|_| !v1);
    let v1_owners = crate::model::v1_subscription_owners(&type_def.auth).0;
    let added = added.filter(|f| !v1 || (f.name == "owner" && v1_owners.contains(&f.name)));
    // v1 adds the relations to types with rules again, with their rules' directives, after
    // the times, as it reaches each target type's rules in the schema's order; it adds the
    // owner field on reaching the type's own.
    let (before, after) = v1_moved_in_order(type_def, model, moved);
    order.extend(before.into_iter().map(Served::Field));
    order.extend(implied.chain(added).map(Served::Field));
    order.extend(after.into_iter().map(Served::Field));
    order
}

/// The relations transformer v1 `moved` after the times, in the order it adds them: by the
/// schema's order of their target types; those to types up to `type_def` itself come before the
/// fields its own rules add, the others after.
fn v1_moved_in_order<'t>(
    type_def: &'t TypeDef,
    model: &Model,
    moved: impl Fn(&FieldDef) -> bool,
) -> (Vec<&'t FieldDef>, Vec<&'t FieldDef>) {
    let mut fields: Vec<&FieldDef> = type_def.fields.iter().filter(|f| moved(f)).collect();
    fields.sort_by_key(|field| v1_target_at(field, model));
    let own = model.types.iter().position(|t| t.name == type_def.name);
    fields
        .into_iter()
        .partition(|field| v1_target_at(field, model) <= own)
}

/// The type a relation `field` targets, if it is one.
fn relation_target(field: &FieldDef) -> Option<&str> {
    match &field.kind {
        FieldKind::BelongsTo { target, .. } => Some(target),
        FieldKind::HasMany(has_many) => Some(&has_many.element),
        _ => None,
    }
}

/// Whether a rule of the type a relation `field` targets limits who reads it (any rule but
/// `public`'s that covers reading).
fn v1_read_ruled(field: &FieldDef, model: &Model) -> bool {
    let target = relation_target(field).and_then(|target| model.type_def(target));
    target.is_some_and(|t| {
        t.auth.iter().any(|rule| {
            rule.allow != crate::model::Allow::Public && rule.covers(crate::model::Operation::Read)
        })
    })
}

/// Where the type a relation `field` targets is declared, among the model's types.
fn v1_target_at(field: &FieldDef, model: &Model) -> Option<usize> {
    let target = relation_target(field)?;
    model.types.iter().position(|t| t.name == target)
}

/// Whether transformer v1 moves `field` after the times: a relation to a type with rules.
fn v1_moves(field: &FieldDef, model: &Model) -> bool {
    let target = relation_target(field).and_then(|target| model.type_def(target));
    target.is_some_and(|t| !t.auth.is_empty())
}

/// The object field of `field`, one of `type_def`'s.
fn generated_field(
    type_def: &TypeDef,
    field: &FieldDef,
    model: &Arc<Model>,
    resolvers: &Resolvers,
) -> Field {
    let pipeline = resolvers.get(&type_def.name, &field.name);
    let mut generated = match &field.kind {
        _ if pipeline.is_some() => {
            custom::field(field, pipeline.cloned().expect("checked just above"))
        }
        FieldKind::Custom(custom) if custom.unresolved => custom::unresolved(field),
        FieldKind::Custom(_) => custom::missing(field),
        FieldKind::Function { .. } => own_fields::type_field(type_def, field, model),
        FieldKind::Scalar {
            scalar, required, ..
        } => stored_field(&field.name, scalar.clone(), *required),
        FieldKind::ScalarList {
            scalar,
            required,
            elements_required,
        } => stored_list_field(&field.name, scalar.clone(), *required, *elements_required),
        FieldKind::Embedded {
            object,
            required,
            list,
        } => embedded::node_field(&field.name, object, *required, *list),
        FieldKind::BelongsTo {
            target,
            foreign_key,
            required,
        } => belongs_to_field(type_def, field, (target, foreign_key, *required), model),
        FieldKind::HasMany(_) | FieldKind::Outgoing { .. } | FieldKind::Incoming { .. } => {
            connection::field(type_def, field, model)
        }
        FieldKind::Targets {
            edge,
            element,
            role,
        } => targets::targets_field(field, edge, element, role.as_deref(), model),
    };
    // A relation's own rules are held by its resolver (below, and in `connection`).
    if !field.auth.is_empty() && pipeline.is_none() && field.stored().is_some() {
        generated = ruled_field(&type_def.name, field);
    }
    if let Some(description) = &field.description {
        generated = generated.description(description);
    }
    generated
}

/// `@belongsTo`: the node whose id the parent stores in `foreign_key`. Nullable in tablegraph's
/// API even when declared non-null (`required`), because the node it points to may since have
/// been deleted; in Amplify's, typed as declared, as AppSync serves it (such a node is then an
/// error, as there).
fn belongs_to_field(
    type_def: &TypeDef,
    field: &FieldDef,
    (target, foreign_key, required): (&str, &str, bool),
    model: &Model,
) -> Field {
    let guard = FieldGuard::of(&type_def.name, field);
    let allowed = possible_types(model, target);
    let foreign_key = foreign_key.to_owned();
    let is_union = model.union_def(target).is_some();
    let non_null = required && model.dialect.amplify_shape();
    let returned = match non_null {
        true => TypeRef::named_nn(target),
        false => TypeRef::named(target),
    };
    let target = target.to_owned();
    Field::new(&field.name, returned, move |ctx| {
        let allowed = allowed.clone();
        let foreign_key = foreign_key.clone();
        let target = target.clone();
        let guard = guard.clone();
        FieldFuture::new(async move {
            if let Some(guard) = &guard {
                guard.check(&ctx).map_err(graphql_error)?;
            }
            let parent = ctx.parent_value.downcast_ref::<Node>();
            let id = parent
                .and_then(|node| node.item.get(&foreign_key))
                .and_then(AttrValue::as_str)
                .map(str::to_owned);
            let node = match id {
                Some(id) => {
                    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
                    let look_ahead = ctx.look_ahead();
                    context::level(&ctx)
                        .map_err(graphql_error)?
                        .node(&id, &allowed, false, &selection(&look_ahead))
                        .await
                        .map_err(graphql_error)?
                }
                None => None,
            };
            match node {
                Some(node) => Ok(Some(node_field_value(node, is_union))),
                None if non_null => Err(null_for_non_null(&ctx, &target, parent)),
                None => Ok(None),
            }
        })
    })
}

/// AppSync's error for a non-null relation whose node is not there (its key is null, or names
/// a node since deleted or one the caller may not read).
fn null_for_non_null(
    ctx: &async_graphql::dynamic::ResolverContext<'_>,
    target: &str,
    parent: Option<&Node>,
) -> async_graphql::Error {
    let path = ctx.path_node.map(|path| path.to_string().replace('.', "/"));
    async_graphql::Error::new(format!(
        "Cannot return null for non-nullable type: '{target}' within parent '{}' (/{})",
        parent.map_or("", |node| node.typename.as_str()),
        path.unwrap_or_default()
    ))
}

/// A stored field with `@auth` rules of its own: read only by callers they allow; `null` with
/// an `Unauthorized` error for others.
fn ruled_field(type_name: &str, field: &FieldDef) -> Field {
    /// How the stored value is answered.
    #[derive(Clone)]
    enum Stored {
        Scalar(ScalarType),
        List(ScalarType),
        Embedded,
    }
    let (ty, stored) = match &field.kind {
        FieldKind::Scalar {
            scalar, required, ..
        } => (
            scalar_type_ref(scalar, *required),
            Stored::Scalar(scalar.clone()),
        ),
        FieldKind::ScalarList {
            scalar,
            required,
            elements_required,
        } => (
            list_type_ref(scalar, *required, *elements_required),
            Stored::List(scalar.clone()),
        ),
        FieldKind::Embedded {
            object,
            required,
            list,
        } => (
            embedded::output_type_ref(object, *required, *list),
            Stored::Embedded,
        ),
        _ => unreachable!("the model allows field rules on stored fields only"),
    };
    let guard = FieldGuard::of(type_name, field).expect("a ruled field has rules");
    let name = field.name.clone();
    Field::new(&field.name, ty, move |ctx| {
        let (guard, name, stored) = (guard.clone(), name.clone(), stored.clone());
        FieldFuture::new(async move {
            let Some(node) = ctx.parent_value.downcast_ref::<Node>() else {
                return Ok(None);
            };
            guard.check(&ctx).map_err(graphql_error)?;
            let value = node.item.get(&name);
            Ok(match &stored {
                Stored::Scalar(scalar) => {
                    to_graphql(value, scalar).map(async_graphql::dynamic::FieldValue::value)
                }
                Stored::List(scalar) => {
                    list_to_graphql(value, scalar).map(async_graphql::dynamic::FieldValue::value)
                }
                Stored::Embedded => embedded::embedded_value(value.cloned()),
            })
        })
    })
}
