//! Change events: what one committed write did to one node or edge, with its item before and
//! after. Every write of the engine records them on its request's scope once its transaction
//! has committed, never before.
//!
//! Version bumps that only guard an edge write against a racing delete are not changes: they
//! change no field a client reads.

use std::sync::Arc;

use crate::store::{AttrValue, Item};

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
            (Some(_), Some(_)) => ChangeKind::Updated,
            (Some(_), None) => ChangeKind::Deleted,
        }
    }

    /// A node's change from `old` to `new` (one of them at least).
    pub(super) fn node(old: Option<Arc<Item>>, new: Option<Arc<Item>>) -> Change {
        Change::named_by("id", old, new)
    }

    /// An edge's change from `old` to `new` (one of them at least), named by its source.
    pub(super) fn edge(old: Option<Arc<Item>>, new: Option<Arc<Item>>) -> Change {
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
            typename: text("__typename"),
            id: text(id_attribute),
            old,
            new,
        }
    }
}
