//! Creating nodes: one, or a batch, each with the nodes and edges its input nests. A new node
//! may bring the node a `@belongsTo` field points at (created with it), new elements of its
//! `@hasMany` relations (created pointing at it), existing elements moved under it (`link`), and
//! edges from it. The whole tree is one transaction, planned as each single write would be:
//! unique items, reference checks, edge sets, events.
//!
//! Two writes on one item cannot share a transaction, so the plan is folded (see
//! [`Plan::folded`]): a reference check of a node created in the same transaction is implied
//! by its put, and two edges to one target add to its counts in one update. Writes that do not fold (a node linked
//! twice, one value taken twice) refuse the input before anything is sent.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use futures::future::try_join_all;

use super::drive::{Attempt, Driver};
use super::edge_writes::{plan_edge_from_new, target_type};
use super::node_writes::{FieldValues, Guard, new_item, plan_new_item, plan_update};
use super::plan::{Plan, join, remember};
use crate::engine::error::EngineError;
use crate::engine::read::{Node, read_node_consistent};
use crate::engine::rules::{Access, authorize_create, fill_owners, unauthorized};
use crate::engine::scope::RequestScope;
use crate::keys;
use crate::model::{FieldKind, HasMany, Model, Operation, TypeDef};
use crate::store::{AttrValue, Item, MAX_TRANSACTION_ITEMS};

/// A node to create, with what its input nests.
#[derive(Debug, Clone, Default)]
pub struct NewNode {
    /// The id the client chose (Amplify's `create<Type>(input: { id })`); a new one when
    /// `None`. A node with that id already there fails the create with
    /// `ConditionalCheckFailed`, as DynamoDB's condition does in Amplify.
    pub id: Option<String>,
    /// Its stored fields.
    pub fields: FieldValues,
    /// `@belongsTo` fields whose node is created with this one; its id goes into the field's
    /// foreign key.
    pub parents: Vec<(String, NewNode)>,
    /// `@hasMany` fields with the elements created with this one, pointing at it.
    pub children: Vec<(String, Vec<NewNode>)>,
    /// `@hasMany` fields with the ids of existing elements to point at this one.
    pub linked: Vec<(String, Vec<String>)>,
    /// Edges from this node.
    pub edges: Vec<NewEdge>,
}

/// An edge from a new node.
#[derive(Debug, Clone)]
pub struct NewEdge {
    /// The edge type.
    pub edge: String,
    /// The target's id.
    pub to: String,
    /// The edge's own fields.
    pub metadata: Item,
}

impl NewNode {
    /// The fewest writes the node and what it nests take: one per node, link and edge.
    fn least_writes(&self) -> usize {
        1 + self.edges.len()
            + self.linked.iter().map(|(_, ids)| ids.len()).sum::<usize>()
            + self
                .parents
                .iter()
                .map(|(_, parent)| parent.least_writes())
                .sum::<usize>()
            + self
                .children
                .iter()
                .flat_map(|(_, children)| children)
                .map(NewNode::least_writes)
                .sum::<usize>()
    }
}

impl From<FieldValues> for NewNode {
    fn from(fields: FieldValues) -> NewNode {
        NewNode {
            fields,
            ..NewNode::default()
        }
    }
}

/// Refuses a create whose `condition` (Amplify's `create<Type>(condition:)`) does not hold for
/// the node that is not there yet, as DynamoDB's condition on a new item does: one that asks
/// anything of a stored value fails with `ConditionalCheckFailed`.
fn check_create_condition(guard: &Guard) -> Result<(), EngineError> {
    match &guard.condition {
        Some(condition) if !condition.matches(&Item::default()) => {
            Err(EngineError::ConditionalCheckFailed)
        }
        _ => Ok(()),
    }
}

/// Creates a node of `type_def` with a new id.
pub async fn create_node(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    fields: &FieldValues,
) -> Result<Node, EngineError> {
    let node = NewNode::from(fields.clone());
    create_tree(scope, model, type_def, &node, &Guard::default()).await
}

/// Creates a node of `type_def` and everything its input nests, in one transaction, when
/// `guard`'s condition holds for a node that is not there yet.
pub async fn create_tree(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    node: &NewNode,
    guard: &Guard,
) -> Result<Node, EngineError> {
    check_create_condition(guard)?;
    let mut created = create_all(scope, model, type_def, std::slice::from_ref(node), false).await?;
    created.pop().ok_or(EngineError::Internal)
}

/// Creates a node of `type_def` (with what it nests) for each member, all or none.
pub async fn create_nodes(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    members: &[NewNode],
) -> Result<Vec<Node>, EngineError> {
    create_all(scope, model, type_def, members, true).await
}

async fn create_all(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    members: &[NewNode],
    batch: bool,
) -> Result<Vec<Node>, EngineError> {
    let at = |index: usize, error: EngineError| {
        if batch { error.in_batch(index) } else { error }
    };
    // Each node, link and edge takes a write at least: a tree that cannot fit is refused
    // before anything is read for it.
    let least: usize = members.iter().map(NewNode::least_writes).sum();
    if least > MAX_TRANSACTION_ITEMS {
        return Err(EngineError::TransactionTooLarge(format!(
            "this {} needs at least {least} writes; one transaction holds at most \
             {MAX_TRANSACTION_ITEMS} (a node takes one, and one more for each unique value, \
             reference and edge it changes)",
            if batch { "batch" } else { "change" }
        )));
    }
    // A caller who may create no node of the type is refused before anything is read.
    if scope.access(&type_def.name, Operation::Create) == Access::Denied {
        return Err(unauthorized(Operation::Create, &type_def.name));
    }
    let (roots, written) = Driver::new(scope, "create")
        .batch(batch)
        .run(move |learned| async move {
            let reads = members
                .iter()
                .enumerate()
                .map(|(index, member)| async move {
                    read_for(scope, model, type_def, member)
                        .await
                        .map_err(|error| at(index, error))
                });
            let found = try_join_all(reads).await?;
            let mut parts = Vec::with_capacity(members.len());
            let mut roots = Vec::with_capacity(members.len());
            let mut written = Vec::new();
            for (index, (member, found)) in members.iter().zip(&found).enumerate() {
                let mut tree = Tree {
                    model,
                    scope,
                    found,
                    absent: &learned.absent,
                    plan: Plan::default(),
                    written: &mut written,
                };
                let root = tree
                    .plan(type_def, member, None)
                    .map_err(|error| at(index, error))?;
                parts.push(tree.plan);
                roots.push(root);
            }
            let plan = join(parts, batch)?;
            Ok(Attempt::Write(plan, (roots, written)))
        })
        .await?;
    for (id, item) in written {
        remember(scope, &id, Some(item));
    }
    Ok(roots
        .into_iter()
        .map(|item| Node::new(type_def.name.clone(), item))
        .collect())
}

/// What a tree's plan needs read first: the type of each edge's target, and each linked node
/// as it is now.
#[derive(Default)]
struct Found {
    target_types: HashMap<(String, String), String>,
    linked: HashMap<String, Item>,
}

/// Reads what `node`'s tree refers to; an error names a target or linked node that is not
/// there.
async fn read_for(
    scope: &RequestScope,
    model: &Model,
    type_def: &TypeDef,
    node: &NewNode,
) -> Result<Found, EngineError> {
    let mut edges = Vec::new();
    let mut links = Vec::new();
    if let Some(id) = chosen_id(scope, type_def, node) {
        keys::validate_id(&id).map_err(|e| EngineError::bad_input(format!("id: {e}")))?;
        // Read again on each attempt: a create that lost the race to the same id fails here.
        if crate::engine::read::node_exists(scope, &id).await? {
            return Err(EngineError::ConditionalCheckFailed);
        }
    }
    gather(model, type_def, node, &mut edges, &mut links)?;
    let targets = edges.iter().map(|(edge, to)| async move {
        let edge_def = model.edge_def(edge).ok_or(EngineError::Internal)?;
        let found = target_type(scope, model, edge_def, to).await?;
        Ok::<_, EngineError>(((edge.clone(), to.clone()), found))
    });
    let linked = links.iter().map(|(field, element, id)| async move {
        keys::validate_id(id).map_err(|e| EngineError::bad_input(format!("{field}.link: {e}")))?;
        let current = read_node_consistent(scope, element, id).await?;
        // A node the caller may not read is answered as one that is not there.
        let readable = |item: &Item| match scope.read_access(&[element.as_str()]) {
            Access::All => true,
            Access::Denied => false,
            Access::Where(filter) => filter.matches(item),
        };
        let current = current.filter(readable).ok_or_else(|| {
            EngineError::bad_input(format!("{field}.link: there is no {element} with id {id}"))
        })?;
        Ok::<_, EngineError>((id.clone(), current))
    });
    let (target_types, linked) =
        futures::future::try_join(try_join_all(targets), try_join_all(linked)).await?;
    Ok(Found {
        target_types: target_types.into_iter().collect(),
        linked: linked.into_iter().collect(),
    })
}

/// The id a new node takes that is not a new one: the client's (`input.id`), or its creator's
/// identity where an owner rule names `id` (Amplify's `ownerField: "id"`).
fn chosen_id(scope: &RequestScope, type_def: &TypeDef, node: &NewNode) -> Option<String> {
    if let Some(id) = &node.id {
        return Some(id.clone());
    }
    let mut owners = Vec::new();
    fill_owners(&scope.rules, &scope.identity, type_def, &mut owners);
    owners
        .into_iter()
        .find_map(|(field, value)| match (field.as_str(), value) {
            ("id", Some(AttrValue::S(id))) => Some(id),
            _ => None,
        })
}

/// The edges (type, target) and links (field, element type, id) of a tree.
fn gather(
    model: &Model,
    type_def: &TypeDef,
    node: &NewNode,
    edges: &mut Vec<(String, String)>,
    links: &mut Vec<(String, String, String)>,
) -> Result<(), EngineError> {
    edges.extend(node.edges.iter().map(|e| (e.edge.clone(), e.to.clone())));
    for (field, parent) in &node.parents {
        let (target, _) = belongs_to(model, type_def, field)?;
        gather(model, target, parent, edges, links)?;
    }
    for (field, children) in &node.children {
        let (element, _) = has_many(model, type_def, field)?;
        for child in children {
            gather(model, element, child, edges, links)?;
        }
    }
    for (field, ids) in &node.linked {
        let (element, _) = has_many(model, type_def, field)?;
        links.extend(
            ids.iter()
                .map(|id| (field.clone(), element.name.clone(), id.clone())),
        );
    }
    Ok(())
}

/// The planning of one tree.
struct Tree<'a> {
    model: &'a Model,
    /// Whose rules the tree's nodes must satisfy.
    scope: &'a RequestScope,
    found: &'a Found,
    /// Former parents of linked nodes known to be gone (see `plan::count_members`).
    absent: &'a BTreeSet<String>,
    plan: Plan,
    /// Every node the tree writes, to be remembered once it commits.
    written: &'a mut Vec<(String, Arc<Item>)>,
}

impl Tree<'_> {
    /// Plans creating `node` of `type_def` and what it nests; `parent` is the foreign key and
    /// the id a `@hasMany` parent gives it. Answers the new node's item.
    fn plan(
        &mut self,
        type_def: &TypeDef,
        node: &NewNode,
        parent: Option<(&str, &str)>,
    ) -> Result<Arc<Item>, EngineError> {
        let model = self.model;
        let mut fields = node.fields.clone();
        for (field, parent_node) in &node.parents {
            let (target, foreign_key) = belongs_to(model, type_def, field)?;
            if fields
                .iter()
                .any(|(name, value)| name == foreign_key && value.is_some())
            {
                return Err(EngineError::bad_input(format!(
                    "give {foreign_key} or {field}, not both"
                )));
            }
            fields.retain(|(name, _)| name != foreign_key);
            let created = self.plan(target, parent_node, None)?;
            let id = crate::engine::derive::text(&created, "id").to_owned();
            fields.push((foreign_key.to_owned(), Some(AttrValue::S(id))));
        }
        if let Some((foreign_key, id)) = parent {
            fields.retain(|(name, _)| name != foreign_key);
            fields.push((foreign_key.to_owned(), Some(AttrValue::S(id.to_owned()))));
        }
        let (rules, identity) = (&self.scope.rules, &self.scope.identity);
        let given: Vec<String> = node.fields.iter().map(|(name, _)| name.clone()).collect();
        fill_owners(rules, identity, type_def, &mut fields);
        // An owner rule on `id` (Amplify's `ownerField: "id"`) makes the creator's identity
        // the id of a node created without one; the rules then check an id that was given.
        let owner_id = fields
            .iter()
            .position(|(name, _)| name == "id")
            .map(|at| fields.remove(at).1);
        let id = match (&node.id, owner_id) {
            (Some(id), _) => id.clone(),
            (None, Some(Some(AttrValue::S(owner)))) => owner,
            (None, _) => keys::new_id(),
        };
        let mut item = new_item(model, type_def, &id, &fields)?;
        authorize_create(rules, identity, type_def, &given, &item)?;
        for edge in &node.edges {
            let edge_def = model.edge_def(&edge.edge).ok_or(EngineError::Internal)?;
            let target_type = self
                .found
                .target_types
                .get(&(edge.edge.clone(), edge.to.clone()))
                .ok_or(EngineError::Internal)?;
            let plan = plan_edge_from_new(
                model,
                edge_def,
                &mut item,
                &edge.to,
                target_type,
                &edge.metadata,
            )?;
            self.plan.append(plan);
        }
        let item = Arc::new(item);
        self.plan.append(plan_new_item(model, type_def, &item)?);
        self.written.push((id.clone(), item.clone()));
        for (field, children) in &node.children {
            let (element, relation) = has_many(model, type_def, field)?;
            for child in children {
                self.plan(element, child, Some((&relation.foreign_key, &id)))?;
            }
        }
        for (field, ids) in &node.linked {
            let (element, relation) = has_many(model, type_def, field)?;
            // A node that detects conflicts changes only by its own update, naming its version.
            if element.conflict.is_some() && !ids.is_empty() {
                return Err(EngineError::bad_input(format!(
                    "{field}: a {} detects conflicts, so it moves under another node by its own \
                     update (with its _version), not by a link",
                    element.name
                )));
            }
            for linked in ids {
                let current = self
                    .found
                    .linked
                    .get(linked)
                    .cloned()
                    .ok_or(EngineError::Internal)?;
                let fields = vec![(relation.foreign_key.clone(), Some(AttrValue::S(id.clone())))];
                // Moving a node under the new one changes it: the caller must be allowed to.
                let guard =
                    Guard::default().ruled(self.scope, element, Operation::Update, &fields)?;
                let planned = plan_update(model, element, current, &fields, &guard, self.absent)?;
                self.plan.append(planned.plan);
                self.written.push((planned.id, planned.item));
            }
        }
        Ok(item)
    }
}

/// The `@model` type a `@belongsTo` field of `type_def` points at, and its foreign key; nested
/// input is offered only where the target is one type.
fn belongs_to<'m>(
    model: &'m Model,
    type_def: &'m TypeDef,
    field: &str,
) -> Result<(&'m TypeDef, &'m str), EngineError> {
    match type_def.field(field).map(|f| &f.kind) {
        Some(FieldKind::BelongsTo {
            target,
            foreign_key,
            ..
        }) => Ok((
            model.type_def(target).ok_or_else(|| {
                EngineError::bad_input(format!("{field}: {target} is not one type; give its id"))
            })?,
            foreign_key,
        )),
        _ => Err(EngineError::Internal),
    }
}

/// The `@model` element type of a `@hasMany` field of `type_def`, and the relation.
fn has_many<'m>(
    model: &'m Model,
    type_def: &'m TypeDef,
    field: &str,
) -> Result<(&'m TypeDef, &'m HasMany), EngineError> {
    match type_def.field(field).map(|f| &f.kind) {
        Some(FieldKind::HasMany(relation)) => Ok((
            model.type_def(&relation.element).ok_or_else(|| {
                EngineError::bad_input(format!(
                    "{field}: {} is not one type; create its elements on their own",
                    relation.element
                ))
            })?,
            relation,
        )),
        _ => Err(EngineError::Internal),
    }
}
