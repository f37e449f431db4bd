//! Graph edges: the `@edge` object types, `add<Edge>`/`remove<Edge>`, `@targets` fields read
//! from edge sets, and the removal of a node's edges when it is deleted.
//!
//! Invariant: a node's edge set always equals its edge items of the types kept in edge sets.
//! Every write of an edge changes the edge item and its source node's edge set in one
//! transaction, conditioned on what was read of both.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputObject, InputValue, Object, ResolverContext, TypeRef,
};

use super::mutation::{Plan, Purpose, read_node, version_is, write};
use super::types::scalar_type_name;
use super::{
    ApiError, NodeValue, RequestScope, load_node, load_nodes, model, node_field_value, scope,
    values,
};
use crate::keys;
use crate::model::{EdgeTypeDef, FieldDef, FieldKind, Model, ScalarType, TypeDef};
use crate::store::{AttrValue, Clause, Item, Key, MAX_ITEM_BYTES, RangeQuery, Write, item_size};

/// How often an edge write re-reads after losing a race to another writer.
const WRITE_ATTEMPTS: usize = 5;
/// The most edges one query of a node's edges reads while deleting it.
const EDGES_PER_READ: usize = 1000;

/// An edge item as resolvers pass it to the `@edge` object type.
struct EdgeItem(Arc<Item>);

/// The `@edge` object type: `GoalMembership { from to role since createdAt updatedAt }`.
pub(super) fn edge_object(edge_def: &EdgeTypeDef, model: &Model) -> Object {
    let endpoint = |name: &str, ty: &str| {
        let attribute = name.to_owned();
        let allowed: Arc<Vec<String>> = Arc::new(
            model
                .possible_types(ty)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        );
        let is_union = model.union_def(ty).is_some();
        Field::new(name, TypeRef::named(ty), move |ctx| {
            let attribute = attribute.clone();
            let allowed = allowed.clone();
            FieldFuture::new(async move {
                let Some(id) = ctx
                    .parent_value
                    .downcast_ref::<EdgeItem>()
                    .and_then(|edge| edge.0.get(&attribute))
                    .and_then(AttrValue::as_str)
                    .map(str::to_owned)
                else {
                    return Ok(None);
                };
                let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
                let scope = scope(&ctx).map_err(ApiError::into_graphql)?;
                let node = load_node(scope, &id, &allowed)
                    .await
                    .map_err(ApiError::into_graphql)?;
                Ok(node.map(|node| node_field_value(node, is_union)))
            })
        })
    };
    let mut object = Object::new(&edge_def.name)
        .field(endpoint("from", &edge_def.from))
        .field(endpoint("to", &edge_def.to));
    if let Some(description) = &edge_def.description {
        object = object.description(description);
    }
    for field in &edge_def.fields {
        if let FieldKind::Scalar {
            scalar, required, ..
        } = &field.kind
        {
            object = object.field(attribute_field(&field.name, scalar.clone(), *required));
        }
    }
    object
        .field(attribute_field("createdAt", ScalarType::AwsDateTime, true))
        .field(attribute_field("updatedAt", ScalarType::AwsDateTime, true))
}

fn attribute_field(name: &str, scalar: ScalarType, required: bool) -> Field {
    super::types::attribute_field::<EdgeItem>(name, scalar, required, |edge| Some(&edge.0))
}

/// `AddGoalMembershipInput { from: ID!, to: ID!, …metadata }`.
pub(super) fn add_input(edge_def: &EdgeTypeDef) -> InputObject {
    let mut input = InputObject::new(format!("Add{}Input", edge_def.name))
        .field(
            InputValue::new("from", TypeRef::named_nn(TypeRef::ID))
                .description(format!("The {}.", edge_def.from)),
        )
        .field(
            InputValue::new("to", TypeRef::named_nn(TypeRef::ID))
                .description(format!("The {}.", edge_def.to)),
        );
    for field in &edge_def.fields {
        if let FieldKind::Scalar {
            scalar, required, ..
        } = &field.kind
        {
            let name = scalar_type_name(scalar);
            let ty = if *required {
                TypeRef::named_nn(name)
            } else {
                TypeRef::named(name)
            };
            input = input.field(InputValue::new(&field.name, ty));
        }
    }
    input
}

/// `addGoalMembership` and `removeGoalMembership`.
pub(super) fn mutation_fields(edge_def: &EdgeTypeDef) -> [Field; 2] {
    let name = edge_def.name.clone();
    let add = Field::new(format!("add{name}"), TypeRef::named_nn(&name), move |ctx| {
        let name = name.clone();
        FieldFuture::new(async move {
            let edge = add(&ctx, &name).await.map_err(ApiError::into_graphql)?;
            Ok(Some(FieldValue::owned_any(EdgeItem(edge))))
        })
    })
    .description(format!(
        "Adds a {} edge, or changes its metadata when it exists.",
        edge_def.name
    ))
    .argument(InputValue::new(
        "input",
        TypeRef::named_nn(format!("Add{}Input", edge_def.name)),
    ));
    let name = edge_def.name.clone();
    let remove = Field::new(
        format!("remove{name}"),
        TypeRef::named_nn(TypeRef::BOOLEAN),
        move |ctx| {
            let name = name.clone();
            FieldFuture::new(async move {
                remove(&ctx, &name).await.map_err(ApiError::into_graphql)?;
                Ok(Some(FieldValue::value(true)))
            })
        },
    )
    .description(format!(
        "Removes a {} edge; an error when there is none.",
        edge_def.name
    ))
    .argument(InputValue::new("from", TypeRef::named_nn(TypeRef::ID)))
    .argument(InputValue::new("to", TypeRef::named_nn(TypeRef::ID)));
    [add, remove]
}

fn edge_def<'m>(model: &'m Model, name: &str) -> Result<&'m EdgeTypeDef, ApiError> {
    model.edge_def(name).ok_or(ApiError::Internal)
}

fn checked_id(value: &str, argument: &str) -> Result<String, ApiError> {
    keys::validate_id(value).map_err(|e| ApiError::bad_input(format!("{argument}: {e}")))?;
    Ok(value.to_owned())
}

/// The sort value of an edge item by its type's `sortBy`, if it has one.
fn edge_sort_value(model: &Model, edge_def: &EdgeTypeDef, item: &Item) -> Option<String> {
    let field = edge_def.sort_by.as_ref()?;
    let scalar = edge_def.sort_scalar()?;
    Some(values::sort_value(model, item, field, scalar))
}

/// The node's edge set with `edge_def`'s entry for `to_id` replaced by `entry` (or removed).
fn with_entry(node: &Item, edge_type: &str, to_id: &str, entry: Option<String>) -> Item {
    let mut node = node.clone();
    let mut set = match node.remove("edges") {
        Some(AttrValue::Ss(set)) => set,
        _ => BTreeSet::new(),
    };
    set.retain(|existing| {
        keys::parse_edge_set_entry(existing)
            .is_none_or(|e| !(e.edge_type == edge_type && e.to_id == to_id))
    });
    set.extend(entry);
    // DynamoDB stores no empty sets: an empty edge set is no attribute.
    if !set.is_empty() {
        node.insert("edges".to_owned(), AttrValue::Ss(set));
    }
    node
}

/// A node's next state after an edge change: the new edge set and the next version.
fn next_version(node: Item) -> (Item, i64) {
    let version = node.get("version").and_then(AttrValue::as_i64).unwrap_or(0);
    let mut node = node;
    node.insert(
        "version".to_owned(),
        AttrValue::N((version + 1).to_string()),
    );
    (node, version)
}

async fn add(ctx: &ResolverContext<'_>, edge_name: &str) -> Result<Arc<Item>, ApiError> {
    let model = model(ctx)?;
    let scope = scope(ctx)?;
    let edge_def = edge_def(model, edge_name)?;
    let input = ctx.args.try_get("input")?.object()?;
    let from = checked_id(input.try_get("from")?.string()?, "from")?;
    let to = checked_id(input.try_get("to")?.string()?, "to")?;
    if from == to {
        return Err(ApiError::bad_input(
            "an edge cannot point at its own source",
        ));
    }
    let mut metadata = Item::new();
    for field in &edge_def.fields {
        let Some(scalar) = field.scalar() else {
            continue;
        };
        if let Some(value) = input.get(&field.name)
            && let Some(value) = values::from_input(value.as_value(), scalar, &field.name)?
        {
            metadata.insert(field.name.clone(), value);
        }
    }
    let edge_key = Key {
        pk: keys::node_key(&from),
        sk: keys::edge_sort_key(edge_name, &to),
    };
    for _ in 0..WRITE_ATTEMPTS {
        let Some(source) = read_node(scope, &edge_def.from, &from).await? else {
            return Err(ApiError::bad_input(format!(
                "from: there is no {} with id {from}",
                edge_def.from
            )));
        };
        let existing = scope
            .store
            .get_item_consistent(&edge_key)
            .await
            .map_err(|e| ApiError::from_store(&e))?;
        // The target's type is recorded on the edge, so a read of the inverse slot knows what
        // the node it starts from is without reading it.
        let reachable = model.possible_types(&edge_def.to);
        let target_type = scope
            .loader
            .load(&keys::node_key(&to))
            .await
            .map_err(|e| ApiError::from_store(&e))?
            .and_then(|target| {
                target
                    .get("__typename")
                    .and_then(AttrValue::as_str)
                    .map(str::to_owned)
            })
            .filter(|typename| reachable.contains(&typename.as_str()));
        let Some(target_type) = target_type else {
            return Err(ApiError::bad_input(format!(
                "to: there is no {} with id {to}",
                edge_def.to
            )));
        };
        let now = values::now();
        let mut edge = metadata.clone();
        edge.extend([
            ("PK".to_owned(), AttrValue::S(edge_key.pk.clone())),
            ("SK".to_owned(), AttrValue::S(edge_key.sk.clone())),
            ("__typename".to_owned(), AttrValue::S(edge_name.to_owned())),
            ("from".to_owned(), AttrValue::S(from.clone())),
            ("to".to_owned(), AttrValue::S(to.clone())),
            ("toType".to_owned(), AttrValue::S(target_type.clone())),
            ("updatedAt".to_owned(), AttrValue::S(now.clone())),
        ]);
        let created = existing
            .as_ref()
            .and_then(|e| e.get("createdAt").cloned())
            .unwrap_or(AttrValue::S(now));
        edge.insert("createdAt".to_owned(), created);
        let sort = edge_sort_value(model, edge_def, &edge);
        edge.insert(
            keys::slot_partition_attribute(edge_def.slot),
            AttrValue::S(keys::slot_partition(edge_name, &to)),
        );
        edge.insert(
            keys::slot_sort_attribute(edge_def.slot),
            AttrValue::S(keys::slot_sort_key(sort.as_deref(), &from)),
        );
        let inverse_key_len = edge
            .get(&keys::slot_sort_attribute(edge_def.slot))
            .and_then(AttrValue::as_str)
            .map_or(0, str::len);
        if inverse_key_len > keys::MAX_SORT_KEY_BYTES {
            return Err(ApiError::bad_input(format!(
                "{edge_name}.{}: too long to sort by: at most {} bytes",
                edge_def.sort_by.as_deref().unwrap_or("sort value"),
                values::MAX_SORT_VALUE_BYTES
            )));
        }
        if item_size(&edge) > MAX_ITEM_BYTES {
            return Err(ApiError::bad_input(format!(
                "the {edge_name} would take {} bytes; DynamoDB limits an item to {MAX_ITEM_BYTES} bytes",
                item_size(&edge)
            )));
        }

        let mut plan = Plan::default();
        let edge_condition = match &existing {
            Some(existing) => vec![Clause::Equals(
                "updatedAt".to_owned(),
                existing
                    .get("updatedAt")
                    .cloned()
                    .unwrap_or(AttrValue::Null),
            )],
            None => vec![Clause::NotExists],
        };
        plan.push(
            Write::Put {
                item: edge.clone(),
                condition: edge_condition,
            },
            Purpose::Edge,
        );
        if edge_def.edge_set {
            let entry = keys::edge_set_entry(edge_name, &to, sort.as_deref());
            let (next, version) = next_version(with_entry(&source, edge_name, &to, Some(entry)));
            let size = item_size(&next);
            if size > MAX_ITEM_BYTES {
                return Err(ApiError::bad_input(format!(
                    "adding this edge would grow {} {from} to {size} bytes, past DynamoDB's item limit of {MAX_ITEM_BYTES} bytes; consider edgeSet: false for {edge_name}",
                    edge_def.from
                )));
            }
            plan.push(
                Write::Put {
                    item: next,
                    condition: vec![version_is(version)],
                },
                Purpose::Node,
            );
        } else {
            // The source's version moves even though its edge set does not, so a delete of the
            // source that read its edges before this one fails and reads them again.
            plan.push(
                Write::Bump {
                    key: Key::same(keys::node_key(&from)),
                    remove_from_edges: Vec::new(),
                    condition: vec![Clause::Equals(
                        "__typename".to_owned(),
                        AttrValue::S(edge_def.from.clone()),
                    )],
                },
                Purpose::Reference {
                    field: "from".to_owned(),
                    target: edge_def.from.clone(),
                    id: from.clone(),
                },
            );
        }
        // Likewise the target's: a delete of the target racing this add fails and retries.
        plan.push(
            Write::Bump {
                key: Key::same(keys::node_key(&to)),
                remove_from_edges: Vec::new(),
                condition: vec![Clause::Equals(
                    "__typename".to_owned(),
                    AttrValue::S(target_type),
                )],
            },
            Purpose::Reference {
                field: "to".to_owned(),
                target: edge_def.to.clone(),
                id: to.clone(),
            },
        );
        match write(scope, plan).await? {
            Ok(()) => {
                scope.loader.forget(&keys::node_key(&from));
                return Ok(Arc::new(edge));
            }
            Err(Purpose::Node | Purpose::Edge) => continue,
            Err(Purpose::Reference { field, target, id }) => {
                return Err(ApiError::bad_input(format!(
                    "{field}: there is no {target} with id {id}"
                )));
            }
            Err(_) => return Err(ApiError::Internal),
        }
    }
    tracing::warn!(%from, %to, edge = edge_name, "add gave up after losing every race");
    Err(ApiError::StorageUnavailable)
}

async fn remove(ctx: &ResolverContext<'_>, edge_name: &str) -> Result<(), ApiError> {
    let model = model(ctx)?;
    let scope = scope(ctx)?;
    let from = checked_id(ctx.args.try_get("from")?.string()?, "from")?;
    let to = checked_id(ctx.args.try_get("to")?.string()?, "to")?;
    let edge_key = Key {
        pk: keys::node_key(&from),
        sk: keys::edge_sort_key(edge_name, &to),
    };
    for _ in 0..WRITE_ATTEMPTS {
        let existing = scope
            .store
            .get_item_consistent(&edge_key)
            .await
            .map_err(|e| ApiError::from_store(&e))?;
        let Some(existing) = existing else {
            return Err(ApiError::bad_input(format!(
                "there is no {edge_name} from {from} to {to}"
            )));
        };
        let plan = detach(model, &[Arc::new(existing)], None);
        match write(scope, plan).await? {
            Ok(()) => {
                scope.loader.forget(&keys::node_key(&from));
                return Ok(());
            }
            Err(Purpose::Node | Purpose::Edge) => continue,
            Err(_) => return Err(ApiError::Internal),
        }
    }
    tracing::warn!(%from, %to, edge = edge_name, "remove gave up after losing every race");
    Err(ApiError::StorageUnavailable)
}

/// The writes that remove `edges` and take their entries out of their sources' edge sets,
/// without reading the sources: each source gets one update that deletes its entries from the
/// set and bumps its version. `deleting` is a node deleted in the same transaction, whose own
/// edge set needs no change. Each edge is deleted only if it is still as it was read.
pub(super) fn detach(model: &Model, edges: &[Arc<Item>], deleting: Option<&str>) -> Plan {
    let text = |item: &Item, attribute: &str| {
        item.get(attribute)
            .and_then(AttrValue::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    // Source id → the entries to take out of its edge set, in a stable order.
    let mut entries: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for edge in edges {
        let edge_type = text(edge, "__typename");
        let Some(edge_def) = model.edge_def(&edge_type).filter(|e| e.edge_set) else {
            continue;
        };
        let from = text(edge, "from");
        if Some(from.as_str()) == deleting {
            continue;
        }
        let entry = keys::edge_set_entry(
            &edge_type,
            &text(edge, "to"),
            edge_sort_value(model, edge_def, edge).as_deref(),
        );
        entries.entry(from).or_default().push(entry);
    }
    let mut plan = Plan::default();
    for (id, removed) in entries {
        plan.push(
            Write::Bump {
                key: Key::same(keys::node_key(&id)),
                remove_from_edges: removed,
                condition: vec![Clause::Exists],
            },
            Purpose::Node,
        );
    }
    for edge in edges {
        plan.push(
            Write::Delete {
                key: Key {
                    pk: text(edge, "PK"),
                    sk: text(edge, "SK"),
                },
                condition: vec![Clause::Equals(
                    "updatedAt".to_owned(),
                    edge.get("updatedAt").cloned().unwrap_or(AttrValue::Null),
                )],
            },
            Purpose::Edge,
        );
    }
    plan
}

/// Every edge touching node `id` of `type_def`: the edge items in its own partition and the
/// edges of every type that may point at it, read from their inverse slots.
pub(super) async fn edges_touching(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    id: &str,
) -> Result<Vec<Arc<Item>>, ApiError> {
    let node_key = keys::node_key(id);
    let mut reads = vec![(None, node_key.clone())];
    for edge_def in &model.edges {
        if model
            .possible_types(&edge_def.to)
            .contains(&type_def.name.as_str())
        {
            reads.push((
                Some(edge_def.slot),
                keys::slot_partition(&edge_def.name, id),
            ));
        }
    }
    let queries = reads.iter().map(|(index, partition)| async move {
        let query = RangeQuery {
            index: *index,
            partition,
            lower: None,
            upper: None,
            filter: None,
            forward: true,
            limit: EDGES_PER_READ,
            consistent: false,
        };
        scope.store.query_range(&query).await
    });
    let found = futures::future::try_join_all(queries)
        .await
        .map_err(|e| ApiError::from_store(&e))?;
    Ok(found
        .into_iter()
        .flatten()
        // The node's own item shares its partition with its outgoing edges.
        .filter(|item| item.get("SK").and_then(AttrValue::as_str) != Some(node_key.as_str()))
        .map(Arc::new)
        .collect())
}

/// `@targets`: the nodes a node's edges of one type point to, read from its edge set and loaded
/// in one batch for every parent of the level.
pub(super) fn targets_field(
    field: &FieldDef,
    edge: &str,
    element: &str,
    role: Option<&str>,
    model: &Model,
) -> Field {
    let edge_def = model
        .edge_def(edge)
        .expect("the model checked that @targets names an edge type");
    let role_sort = role_sort_value(model, edge_def, role);
    let allowed: Arc<Vec<String>> = Arc::new(
        model
            .possible_types(element)
            .into_iter()
            .map(str::to_owned)
            .collect(),
    );
    let is_union = model.union_def(element).is_some();
    // Every target of the edge is of this one type, checked when the edge was added: a query
    // that wants only the targets' ids needs no read at all.
    let identity_known = !is_union && model.possible_types(&edge_def.to) == [element];
    let element_name = element.to_owned();
    let edge = edge.to_owned();
    Field::new(
        &field.name,
        TypeRef::named_nn_list_nn(element),
        move |ctx| {
            let edge = edge.clone();
            let role_sort = role_sort.clone();
            let allowed = allowed.clone();
            let element = element_name.clone();
            FieldFuture::new(async move {
                let Some(parent) = ctx.parent_value.downcast_ref::<NodeValue>() else {
                    return Ok(None);
                };
                let ids = target_ids(&parent.item, &edge, role_sort.as_deref());
                if identity_known && super::prefetch::selects_only_identity(&ctx.look_ahead()) {
                    return Ok(Some(FieldValue::list(ids.into_iter().map(|id| {
                        FieldValue::owned_any(NodeValue {
                            typename: element.clone(),
                            item: Arc::new(Item::from([
                                ("id".to_owned(), AttrValue::S(id)),
                                ("__typename".to_owned(), AttrValue::S(element.clone())),
                            ])),
                        })
                    }))));
                }
                let scope = scope(&ctx).map_err(ApiError::into_graphql)?;
                let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
                let nodes = load_nodes(scope, &ids, &allowed)
                    .await
                    .map_err(ApiError::into_graphql)?;
                let model = super::model(&ctx).map_err(ApiError::into_graphql)?;
                let found: Vec<&NodeValue> = nodes.iter().flatten().collect();
                super::prefetch::relations(scope, model, &found, &ctx.look_ahead())
                    .await
                    .map_err(ApiError::into_graphql)?;
                Ok(Some(FieldValue::list(
                    nodes
                        .into_iter()
                        .flatten()
                        .map(|node| node_field_value(node, is_union)),
                )))
            })
        },
    )
}

/// The sort value a `@targets(role:)` filter matches in edge set entries.
pub(super) fn role_sort_value(
    model: &Model,
    edge_def: &EdgeTypeDef,
    role: Option<&str>,
) -> Option<String> {
    let role = role?;
    match edge_def.sort_scalar() {
        Some(ScalarType::Enum(enum_name)) => Some(values::enum_sort_value(model, enum_name, role)),
        _ => None,
    }
}

/// The targets of a node's edges of type `edge` (with sort value `role_sort`, if given), as
/// its edge set lists them.
pub(super) fn target_ids(node: &Item, edge: &str, role_sort: Option<&str>) -> Vec<String> {
    match node.get("edges") {
        Some(AttrValue::Ss(set)) => set
            .iter()
            .filter_map(|entry| keys::parse_edge_set_entry(entry))
            .filter(|e| e.edge_type == edge)
            .filter(|e| role_sort.is_none() || e.sort_value == role_sort)
            .map(|e| e.to_id.to_owned())
            .collect(),
        _ => Vec::new(),
    }
}
