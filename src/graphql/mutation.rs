//! The Mutation root: create, update and delete for every `@model` type.
//!
//! Every mutation is one all-or-nothing write: the node, the unique-value items it takes or
//! frees, and a check of each node it points to. Updates and deletes read the node first
//! (strongly consistent) and write on condition that its version has not moved; when another
//! writer got there first they read again, unless the client pinned `expectedVersion`.

use std::sync::Arc;

use async_graphql::dynamic::{
    Field, FieldFuture, InputValue, Object, ObjectAccessor, ResolverContext, TypeRef,
};

use super::{ApiError, NodeValue, id_argument, model, node_field_value, scope, values};
use crate::keys;
use crate::model::{FieldKind, Model, TypeDef};
use crate::store::{AttrValue, Clause, Item, Key, MAX_TRANSACTION_ITEMS, StoreError, Write};

/// How often an update or delete re-reads after losing a race to another writer.
const WRITE_ATTEMPTS: usize = 5;
/// Edges removed per transaction when a node has too many to delete in one: each edge is a
/// delete and at most one edge-set update, so this stays under the 100-item limit.
const EDGES_PER_STEP: usize = 40;

pub(super) fn root(model: &Arc<Model>) -> Object {
    let mut root = Object::new("Mutation");
    for edge_def in &model.edges {
        for field in super::edges::mutation_fields(edge_def) {
            root = root.field(field);
        }
    }
    for type_def in &model.types {
        let name = &type_def.name;
        root = root
            .field(
                mutation_field(&format!("create{name}"), TypeRef::named_nn(name), name, create)
                    .description(format!("Creates a {name}."))
                    .argument(InputValue::new("input", TypeRef::named_nn(format!("Create{name}Input")))),
            )
            .field(
                mutation_field(&format!("update{name}"), TypeRef::named_nn(name), name, update)
                    .description("Changes the fields given in input; fields left out keep their values.")
                    .argument(InputValue::new("input", TypeRef::named_nn(format!("Update{name}Input")))),
            )
            .field(
                mutation_field(&format!("delete{name}"), TypeRef::named(name), name, delete)
                    .description(format!("Deletes a {name} and frees its unique values; null when there is no such {name}."))
                    .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)))
                    .argument(InputValue::new("expectedVersion", TypeRef::named(TypeRef::INT))),
            );
    }
    root
}

type MutationFuture<'a> =
    std::pin::Pin<Box<dyn Future<Output = Result<Option<NodeValue>, ApiError>> + Send + 'a>>;

/// A root field whose resolver runs `run` for the type `type_name`.
fn mutation_field(
    name: &str,
    ty: TypeRef,
    type_name: &str,
    run: for<'a> fn(&'a ResolverContext<'a>, &'a TypeDef) -> MutationFuture<'a>,
) -> Field {
    let type_name = type_name.to_owned();
    Field::new(name, ty, move |ctx| {
        let type_name = type_name.clone();
        FieldFuture::new(async move {
            let model = model(&ctx).map_err(ApiError::into_graphql)?;
            let type_def = model
                .type_def(&type_name)
                .ok_or_else(|| ApiError::Internal.into_graphql())?;
            let node = run(&ctx, type_def).await.map_err(ApiError::into_graphql)?;
            Ok(node.map(|node| node_field_value(node, false)))
        })
    })
}

/// Why a write is in a mutation's transaction: what a failed condition on it means.
#[derive(Debug, Clone)]
pub(super) enum Purpose {
    /// A node, conditioned on the version that was read: another writer got there first.
    Node,
    TakeUnique(String),
    FreeUnique,
    Reference {
        field: String,
        target: String,
        id: String,
    },
    /// An edge item, conditioned on what was read of it: another writer got there first.
    Edge,
}

#[derive(Default)]
pub(super) struct Plan {
    pub writes: Vec<Write>,
    pub purposes: Vec<Purpose>,
}

impl Plan {
    pub fn push(&mut self, write: Write, purpose: Purpose) {
        self.writes.push(write);
        self.purposes.push(purpose);
    }

    pub fn append(&mut self, other: Plan) {
        self.writes.extend(other.writes);
        self.purposes.extend(other.purposes);
    }

    pub fn len(&self) -> usize {
        self.writes.len()
    }
}

fn create<'a>(ctx: &'a ResolverContext<'a>, type_def: &'a TypeDef) -> MutationFuture<'a> {
    Box::pin(async move {
        let model = model(ctx)?;
        let input = ctx.args.try_get("input")?.object()?;
        let id = keys::new_id();
        let now = values::now();
        let mut item = Item::from([
            ("PK".to_owned(), AttrValue::S(keys::node_key(&id))),
            ("SK".to_owned(), AttrValue::S(keys::node_key(&id))),
            ("__typename".to_owned(), AttrValue::S(type_def.name.clone())),
            ("id".to_owned(), AttrValue::S(id.clone())),
            ("createdAt".to_owned(), AttrValue::S(now.clone())),
            ("updatedAt".to_owned(), AttrValue::S(now)),
            ("version".to_owned(), AttrValue::N("1".to_owned())),
        ]);
        apply_input(type_def, &input, &[], &mut item)?;
        values::set_slot_attributes(model, type_def, &mut item);
        values::check_limits(type_def, &item)?;

        let mut plan = Plan::default();
        plan.push(
            Write::Put {
                item: item.clone(),
                condition: vec![Clause::NotExists],
            },
            Purpose::Node,
        );
        take_unique_values(type_def, None, &item, &mut plan);
        check_references(model, type_def, None, &item, &mut plan)?;
        let scope = scope(ctx)?;
        match write(scope, plan).await? {
            Ok(()) => Ok(Some(remember(scope, type_def, item))),
            Err(Purpose::Node | Purpose::FreeUnique) => {
                tracing::error!(%id, "a new node's id or unique items already existed");
                Err(ApiError::Internal)
            }
            Err(purpose) => Err(refused(type_def, purpose)),
        }
    })
}

fn update<'a>(ctx: &'a ResolverContext<'a>, type_def: &'a TypeDef) -> MutationFuture<'a> {
    Box::pin(async move {
        let model = model(ctx)?;
        let scope = scope(ctx)?;
        let input = ctx.args.try_get("input")?.object()?;
        let id = input.try_get("id")?.string()?.to_owned();
        keys::validate_id(&id).map_err(|e| ApiError::bad_input(format!("id: {e}")))?;
        let expected = expected_version(input.get("expectedVersion"))?;
        let absent = unsent_variable_fields(ctx, "input");
        for _ in 0..WRITE_ATTEMPTS {
            let Some(current) = read_current(scope, type_def, &id).await? else {
                return Err(ApiError::bad_input(format!(
                    "there is no {} with id {id}",
                    type_def.name
                )));
            };
            let version = check_version(&current, expected)?;
            let mut next = current.clone();
            apply_input(type_def, &input, &absent, &mut next)?;
            next.insert(
                "version".to_owned(),
                AttrValue::N((version + 1).to_string()),
            );
            next.insert("updatedAt".to_owned(), AttrValue::S(values::now()));
            values::set_slot_attributes(model, type_def, &mut next);
            values::check_limits(type_def, &next)?;

            let mut plan = Plan::default();
            plan.push(
                Write::Put {
                    item: next.clone(),
                    condition: vec![version_is(version)],
                },
                Purpose::Node,
            );
            take_unique_values(type_def, Some(&current), &next, &mut plan);
            check_references(model, type_def, Some(&current), &next, &mut plan)?;
            match write(scope, plan).await? {
                Ok(()) => return Ok(Some(remember(scope, type_def, next))),
                // Another writer changed the node since it was read: read again.
                Err(Purpose::Node) => continue,
                Err(Purpose::FreeUnique) => return Err(unique_item_owned_elsewhere(type_def, &id)),
                Err(purpose) => return Err(refused(type_def, purpose)),
            }
        }
        tracing::warn!(%id, "update gave up after losing every race to other writers");
        Err(ApiError::StorageUnavailable)
    })
}

fn delete<'a>(ctx: &'a ResolverContext<'a>, type_def: &'a TypeDef) -> MutationFuture<'a> {
    Box::pin(async move {
        let model = model(ctx)?;
        let scope = scope(ctx)?;
        let id = id_argument(ctx, "id")?;
        // The client's expectation is about the node as it is now. Steps that remove edges
        // move the version themselves, so after the first step it no longer applies.
        let mut expected = expected_version(ctx.args.get("expectedVersion"))?;
        let mut lost_races = 0;
        while lost_races < WRITE_ATTEMPTS {
            let Some(current) = read_current(scope, type_def, &id).await? else {
                return Ok(None);
            };
            let version = check_version(&current, expected)?;
            let edges = super::edges::edges_touching(scope, model, type_def, &id).await?;
            let mut plan = Plan::default();
            plan.push(
                Write::Delete {
                    key: Key::same(keys::node_key(&id)),
                    condition: vec![version_is(version)],
                },
                Purpose::Node,
            );
            free_unique_values(type_def, &current, &id, &mut plan);
            plan.append(super::edges::detach(model, &edges, Some(&id)));
            if plan.len() > MAX_TRANSACTION_ITEMS {
                // Too many edges for one transaction: remove some in a step of their own, which
                // keeps every edge set equal to its edges, then look again. A delete that stops
                // midway leaves a consistent node with fewer edges; deleting it again resumes.
                let step: Vec<_> = edges.into_iter().take(EDGES_PER_STEP).collect();
                let plan = super::edges::detach(model, &step, None);
                match write(scope, plan).await? {
                    Ok(()) => expected = None,
                    Err(Purpose::Node | Purpose::Edge) => lost_races += 1,
                    Err(_) => return Err(ApiError::Internal),
                }
                continue;
            }
            match write(scope, plan).await? {
                Ok(()) => {
                    scope.loader.prime(&keys::node_key(&id), None);
                    return Ok(Some(NodeValue {
                        typename: type_def.name.clone(),
                        item: Arc::new(current),
                    }));
                }
                Err(Purpose::Node | Purpose::Edge) => lost_races += 1,
                Err(Purpose::FreeUnique) => return Err(unique_item_owned_elsewhere(type_def, &id)),
                Err(purpose) => return Err(refused(type_def, purpose)),
            }
        }
        tracing::warn!(%id, "delete gave up after losing every race to other writers");
        Err(ApiError::StorageUnavailable)
    })
}

/// Runs a plan; a failed condition comes back as the purpose of the write that failed.
pub(super) async fn write(
    scope: &super::RequestScope,
    plan: Plan,
) -> Result<Result<(), Purpose>, ApiError> {
    if plan.writes.len() > MAX_TRANSACTION_ITEMS {
        return Err(ApiError::TransactionTooLarge(format!(
            "this change needs {} writes; one transaction holds at most {MAX_TRANSACTION_ITEMS}",
            plan.writes.len()
        )));
    }
    match scope.store.transact_write(plan.writes).await {
        Ok(()) => Ok(Ok(())),
        Err(StoreError::ConditionFailed { index }) => plan
            .purposes
            .get(index)
            .cloned()
            .map(Err)
            .ok_or(ApiError::Internal),
        Err(e) => Err(ApiError::from_store(&e)),
    }
}

/// What a failed condition tells the client.
pub(super) fn refused(type_def: &TypeDef, purpose: Purpose) -> ApiError {
    match purpose {
        Purpose::TakeUnique(field) => ApiError::UniqueConstraintViolation {
            type_name: type_def.name.clone(),
            field,
        },
        Purpose::Reference { field, target, id } => {
            ApiError::bad_input(format!("{field}: there is no {target} with id {id}"))
        }
        Purpose::Node | Purpose::FreeUnique | Purpose::Edge => ApiError::Internal,
    }
}

/// Writes the input's stored fields into `item`. A field left out keeps its value; an explicit
/// null removes it, unless the field is non-null.
fn apply_input(
    type_def: &TypeDef,
    input: &ObjectAccessor<'_>,
    absent: &[String],
    item: &mut Item,
) -> Result<(), ApiError> {
    for field in &type_def.fields {
        let FieldKind::Scalar {
            scalar, required, ..
        } = &field.kind
        else {
            continue;
        };
        let Some(value) = input.get(&field.name) else {
            continue;
        };
        if absent.contains(&field.name) {
            continue;
        }
        match values::from_input(value.as_value(), scalar, &field.name)? {
            Some(value) => {
                item.insert(field.name.clone(), value);
            }
            None if *required => {
                return Err(ApiError::bad_input(format!(
                    "{} must not be null",
                    field.name
                )));
            }
            None => {
                item.remove(&field.name);
            }
        }
    }
    Ok(())
}

/// The fields of the input object literal in argument `argument` whose value is a variable the
/// client did not send (and that has no default). GraphQL says such a field is absent, but the
/// executor hands it over as null, which for an update would clear the field.
fn unsent_variable_fields(ctx: &ResolverContext<'_>, argument: &str) -> Vec<String> {
    let Some(literal) = ctx.item.node.get_argument(argument) else {
        return Vec::new();
    };
    let async_graphql_value::Value::Object(fields) = &literal.node else {
        return Vec::new();
    };
    let sent = |variable: &async_graphql::Name| {
        ctx.query_env.variables.contains_key(variable)
            || ctx
                .query_env
                .operation
                .node
                .variable_definitions
                .iter()
                .any(|d| d.node.name.node == *variable && d.node.default_value.is_some())
    };
    fields
        .iter()
        .filter_map(|(name, value)| match value {
            async_graphql_value::Value::Variable(variable) if !sent(variable) => {
                Some(name.to_string())
            }
            _ => None,
        })
        .collect()
}

/// A unique value the node holds is reserved for another node: the table broke an invariant.
fn unique_item_owned_elsewhere(type_def: &TypeDef, id: &str) -> ApiError {
    tracing::error!(
        type_name = %type_def.name,
        %id,
        "integrity: a unique value of this node is reserved by another node"
    );
    ApiError::Internal
}

/// Adds the unique-value items `next` takes and `current` frees.
fn take_unique_values(type_def: &TypeDef, current: Option<&Item>, next: &Item, plan: &mut Plan) {
    let id = next
        .get("id")
        .and_then(AttrValue::as_str)
        .unwrap_or_default()
        .to_owned();
    for field in type_def.unique_fields() {
        let key_of = |item: &Item| {
            item.get(&field.name)
                .map(values::unique_text)
                .map(|value| keys::unique_key(&type_def.name, &field.name, &value))
        };
        let old_key = current.and_then(key_of);
        let new_key = key_of(next);
        if old_key == new_key {
            continue;
        }
        if let Some(old_key) = old_key {
            plan.push(free_unique(old_key, &id), Purpose::FreeUnique);
        }
        if let Some(new_key) = new_key {
            plan.push(
                Write::Put {
                    item: Item::from([
                        ("PK".to_owned(), AttrValue::S(new_key.clone())),
                        ("SK".to_owned(), AttrValue::S(new_key)),
                        (
                            "__typename".to_owned(),
                            AttrValue::S(keys::unique_typename(&type_def.name, &field.name)),
                        ),
                        ("id".to_owned(), AttrValue::S(id.clone())),
                    ]),
                    condition: vec![Clause::NotExists],
                },
                Purpose::TakeUnique(field.name.clone()),
            );
        }
    }
}

fn free_unique_values(type_def: &TypeDef, current: &Item, id: &str, plan: &mut Plan) {
    for field in type_def.unique_fields() {
        if let Some(value) = current.get(&field.name) {
            let key = keys::unique_key(&type_def.name, &field.name, &values::unique_text(value));
            plan.push(free_unique(key, id), Purpose::FreeUnique);
        }
    }
}

/// Deletes a unique-value item, but only the owner's: a value some other node holds stays.
fn free_unique(key: String, owner: &str) -> Write {
    Write::Delete {
        key: Key::same(key),
        condition: vec![Clause::AbsentOrEquals(
            "id".to_owned(),
            AttrValue::S(owner.to_owned()),
        )],
    }
}

/// Adds a check that each node `next` points to (through a `@belongsTo` key that is new or
/// changed) exists and has a type the relation allows.
fn check_references(
    model: &Model,
    type_def: &TypeDef,
    current: Option<&Item>,
    next: &Item,
    plan: &mut Plan,
) -> Result<(), ApiError> {
    let own_id = next
        .get("id")
        .and_then(AttrValue::as_str)
        .unwrap_or_default();
    for field in &type_def.fields {
        let FieldKind::BelongsTo {
            target,
            foreign_key,
            ..
        } = &field.kind
        else {
            continue;
        };
        let Some(target_id) = next.get(foreign_key).and_then(AttrValue::as_str) else {
            continue;
        };
        if current.and_then(|c| c.get(foreign_key)) == next.get(foreign_key) {
            continue;
        }
        let allowed = model.possible_types(target);
        if target_id == own_id {
            // DynamoDB refuses two operations on one item; the node's own type is known.
            if allowed.contains(&type_def.name.as_str()) {
                continue;
            }
            return Err(ApiError::bad_input(format!(
                "{foreign_key}: there is no {target} with id {target_id}"
            )));
        }
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key(target_id)),
                condition: vec![Clause::OneOf(
                    "__typename".to_owned(),
                    allowed
                        .iter()
                        .map(|t| AttrValue::S((*t).to_owned()))
                        .collect(),
                )],
            },
            Purpose::Reference {
                field: foreign_key.clone(),
                target: target.clone(),
                id: target_id.to_owned(),
            },
        );
    }
    Ok(())
}

/// The node `id` if it is of `type_def`, read strongly consistent for a read-modify-write.
async fn read_current(
    scope: &super::RequestScope,
    type_def: &TypeDef,
    id: &str,
) -> Result<Option<Item>, ApiError> {
    read_node(scope, &type_def.name, id).await
}

/// The node `id` if it is of type `type_name`, read strongly consistent.
pub(super) async fn read_node(
    scope: &super::RequestScope,
    type_name: &str,
    id: &str,
) -> Result<Option<Item>, ApiError> {
    let item = scope
        .store
        .get_item_consistent(&Key::same(keys::node_key(id)))
        .await
        .map_err(|e| ApiError::from_store(&e))?;
    Ok(item.filter(|item| item.get("__typename").and_then(AttrValue::as_str) == Some(type_name)))
}

fn expected_version(
    value: Option<async_graphql::dynamic::ValueAccessor<'_>>,
) -> Result<Option<i64>, ApiError> {
    match value.filter(|v| !v.is_null()) {
        Some(value) => Ok(Some(value.i64()?)),
        None => Ok(None),
    }
}

/// The node's version, refused when the client expected another.
fn check_version(current: &Item, expected: Option<i64>) -> Result<i64, ApiError> {
    let version = current
        .get("version")
        .and_then(AttrValue::as_i64)
        .unwrap_or(0);
    match expected {
        Some(expected) if expected != version => Err(ApiError::VersionMismatch {
            expected,
            actual: version,
        }),
        _ => Ok(version),
    }
}

pub(super) fn version_is(version: i64) -> Clause {
    Clause::Equals("version".to_owned(), AttrValue::N(version.to_string()))
}

/// Makes the written node visible to the rest of the request and hands it to the client.
fn remember(scope: &super::RequestScope, type_def: &TypeDef, item: Item) -> NodeValue {
    let item = Arc::new(item);
    let id = item
        .get("id")
        .and_then(AttrValue::as_str)
        .unwrap_or_default();
    scope.loader.prime(&keys::node_key(id), Some(item.clone()));
    NodeValue {
        typename: type_def.name.clone(),
        item,
    }
}
