//! Change events: what one committed write did to one node or edge, with its item before and
//! after. Every write of the engine records them on its request's scope once its transaction
//! has committed, never before.
//!
//! Writes that only add to a node's counts or edge set (a child created, an edge added) are
//! not changes of the node: they change no field a client reads.

use std::sync::Arc;

use crate::keys;
use crate::keys::TYPENAME;
use crate::store::{AttrValue, Item, StreamRecord};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Created,
    Updated,
    Deleted,
}

/// One node or edge as one transaction changed it.
#[derive(Debug, Clone)]
pub struct Change {
    /// The node type, or the edge type for an edge.
    pub typename: String,
    /// The node's id; for an edge, its source's id (`old`/`new` hold both ends).
    pub id: String,
    pub old: Option<Arc<Item>>,
    pub new: Option<Arc<Item>>,
}

impl Change {
    pub fn kind(&self) -> ChangeKind {
        match (&self.old, &self.new) {
            (None, _) => ChangeKind::Created,
            // A tombstone (conflict detection's delete) is the node's delete.
            (Some(old), Some(new)) if new.is_tombstone() && !old.is_tombstone() => {
                ChangeKind::Deleted
            }
            (Some(_), Some(_)) => ChangeKind::Updated,
            (Some(_), None) => ChangeKind::Deleted,
        }
    }

    /// A node's change from `old` to `new` (one of them at least).
    pub fn node(old: Option<Arc<Item>>, new: Option<Arc<Item>>) -> Change {
        Change::named_by("id", old, new)
    }

    /// An edge's change from `old` to `new` (one of them at least), named by its source.
    pub fn edge(old: Option<Arc<Item>>, new: Option<Arc<Item>>) -> Change {
        Change::named_by("from", old, new)
    }

    fn named_by(id_attribute: &str, old: Option<Arc<Item>>, new: Option<Arc<Item>>) -> Change {
        let item = new.as_ref().or(old.as_ref());
        let text = |attribute: &str| {
            item.and_then(|item| item.get(attribute))
                .and_then(AttrValue::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Change {
            typename: text(TYPENAME),
            id: text(id_attribute),
            old,
            new,
        }
    }
}

/// The typename of the events that publish the answers of the schema's own mutation
/// `mutation`: no type's or edge's name (those have no dot).
pub fn published_typename(mutation: &str) -> String {
    format!("Mutation.{mutation}")
}

/// The attribute of a published item that holds the answer.
pub const PUBLISHED_ANSWER: &str = "answer";

/// The change a stream record describes, or `None` when it is no event: an item that is not a
/// node or an edge, an update that changed nothing a client reads, or the removal of a
/// tombstone. A write of a published item (`keys::published_key`) is the event of its answer.
pub(super) fn change_of(record: StreamRecord) -> Option<Change> {
    let item = record.new.as_ref().or(record.old.as_ref())?;
    let pk = item.get(keys::PK)?.as_str()?;
    let sk = item.get(keys::SK)?.as_str()?;
    if let Some(mutation) = keys::published_mutation(pk) {
        return published(mutation, record.new.as_ref()?);
    }
    if !pk.starts_with(&keys::node_key("")) {
        return None;
    }
    let is_node = pk == sk;
    if let (Some(old), Some(new)) = (&record.old, &record.new)
        && same_to_clients(old, new)
    {
        return None;
    }
    // A tombstone removed past its `_ttl` was deleted, and told, when it became one.
    if let (Some(old), None) = (&record.old, &record.new)
        && old.is_tombstone()
    {
        return None;
    }
    let old = record.old.map(Arc::new);
    let new = record.new.map(Arc::new);
    Some(if is_node {
        Change::node(old, new)
    } else {
        Change::edge(old, new)
    })
}

/// The event of one answer written over `mutation`'s published item: the answer's fields, as
/// a new item named by [`published_typename`].
fn published(mutation: &str, item: &Item) -> Option<Change> {
    let AttrValue::M(answer) = item.get(PUBLISHED_ANSWER)? else {
        return None;
    };
    let mut answer = answer.clone();
    let typename = published_typename(mutation);
    answer.insert(TYPENAME.to_owned(), AttrValue::S(typename.clone()));
    Some(Change {
        typename,
        id: String::new(),
        old: None,
        new: Some(Arc::new(answer)),
    })
}

/// Whether two versions of an item differ only in what no client reads of the node itself: the
/// version, the update time, the edge set, the relation slots and the counts of its
/// connections (a new member is an event of the member, not of its parent).
fn same_to_clients(old: &Item, new: &Item) -> bool {
    // `version`, or `_version` where the type has a `version` field of its own.
    let version = new.version_attribute();
    let read = |name: &str| {
        !matches!(name, "updatedAt" | "edges")
            && name != version
            && !keys::is_slot_attribute(name)
            && !keys::is_count_attribute(name)
    };
    old.iter()
        .filter(|(name, _)| read(name))
        .all(|(name, value)| new.get(name) == Some(value))
        && new
            .keys()
            .filter(|name| read(name))
            .all(|name| old.contains_key(name))
}
