//! Folding a plan: the writes of one transaction on one item made one write, as DynamoDB
//! takes no two operations on one item in a transaction (see [`Plan::folded`]).

use std::collections::HashMap;

use super::plan::{Clash, Plan, Purpose};
use crate::keys::TYPENAME;
use crate::store::{AttrValue, Clause, Item, Key, Write};

impl Plan {
    /// The plan with the writes on one item folded into one, as one transaction needs them:
    /// checks and updates of one node merge (their conditions joined, their changes in one
    /// update expression when no attribute is named twice), a check or an addition to the
    /// counts of a node the plan puts whole goes into that put when its conditions hold on the
    /// put item, additions to the counts and edge set of a node the plan deletes are dropped,
    /// one edge deleted from both ends is deleted once, and a unique value one node frees and
    /// another takes changes hands in one put. Any other pair is a [`Clash`].
    pub fn folded(self) -> Result<Plan, Clash> {
        let mut folded = Plan::default();
        let mut at: HashMap<Key, usize> = HashMap::new();
        let writes = self.writes.into_iter().zip(self.purposes).zip(self.parts);
        for ((write, purpose), part) in writes {
            let key = write.key();
            let Some(&index) = at.get(&key) else {
                at.insert(key, folded.writes.len());
                folded.writes.push(write);
                folded.purposes.push(purpose);
                folded.parts.push(part);
                continue;
            };
            let earlier = (
                folded.writes[index].clone(),
                folded.purposes[index].clone(),
                folded.parts[index],
            );
            let later_purpose = purpose.clone();
            let Some((write, purpose, part)) = fold(earlier, (write, purpose, part)) else {
                return Err(Clash {
                    first: folded.parts[index],
                    second: part,
                    purpose: later_purpose,
                });
            };
            folded.writes[index] = write;
            folded.purposes[index] = purpose;
            folded.parts[index] = part;
        }
        Ok(folded)
    }
}

type Planned = (Write, Purpose, usize);

/// Two writes on one item as one write, if they fold (see [`Plan::folded`]).
fn fold(earlier: Planned, later: Planned) -> Option<Planned> {
    use Write::{Check, Delete, Put, Tally, Update};
    let joined = |a: &[Clause], b: &[Clause]| {
        let mut condition = a.to_vec();
        condition.extend(b.iter().filter(|clause| !a.contains(clause)).cloned());
        condition
    };
    match (&earlier.0, &later.0) {
        (
            Check { key, condition: a }
            | Update {
                key, condition: a, ..
            },
            Check { condition: b, .. } | Update { condition: b, .. },
        ) => {
            let write = checks_and_updates(key, (a, &earlier.0), (b, &later.0))?;
            // The node's own write (an update on its version) speaks for the merged one: when
            // it fails, another writer changed the node, and the operation reads again. (The
            // node exists, being written; a count or reference on it that failed with it is
            // decided on that read.)
            if matches!(later.1, Purpose::Node) && !matches!(earlier.1, Purpose::Node) {
                return Some((write, later.1, later.2));
            }
            Some((write, earlier.1, earlier.2))
        }
        (
            Put {
                item,
                condition: put,
            },
            Check { condition, .. } | Update { condition, .. },
        ) if implied(&later.0, item, condition) => {
            let write = Put {
                item: counted(item, &later.0),
                condition: put.clone(),
            };
            Some((write, earlier.1, earlier.2))
        }
        (
            Check { condition, .. } | Update { condition, .. },
            Put {
                item,
                condition: put,
            },
        ) if implied(&earlier.0, item, condition) => {
            let write = Put {
                item: counted(item, &earlier.0),
                condition: put.clone(),
            };
            Some((write, later.1, later.2))
        }
        // Counts and edge-set entries of a node the plan deletes go with it.
        (Delete { .. }, Update { changes, .. })
            if changes.only_adds_and_takes()
                && matches!(later.1, Purpose::Node | Purpose::Count { .. }) =>
        {
            Some(earlier)
        }
        (Update { changes, .. }, Delete { .. })
            if changes.only_adds_and_takes()
                && matches!(earlier.1, Purpose::Node | Purpose::Count { .. }) =>
        {
            Some(later)
        }
        (
            Tally {
                key,
                typename,
                counts: a,
            },
            Tally { counts: b, .. },
        ) => {
            let mut counts = a.clone();
            add_counts(&mut counts, b);
            let write = Tally {
                key: key.clone(),
                typename: typename.clone(),
                counts,
            };
            Some((write, earlier.1, earlier.2))
        }
        (Delete { condition: a, .. }, Delete { condition: b, .. }) if a == b => Some(earlier),
        // One edge deleted from both ends, read at different times: both reads must still
        // hold, or the edge changed and the operation reads again.
        (Delete { key, condition: a }, Delete { condition: b, .. })
            if matches!((&earlier.1, &later.1), (Purpose::Edge, Purpose::Edge)) =>
        {
            let write = Delete {
                key: key.clone(),
                condition: joined(a, b),
            };
            Some((write, earlier.1, earlier.2))
        }
        (Delete { condition, .. }, Put { item, .. })
            if matches!(earlier.1, Purpose::FreeUnique)
                && matches!(later.1, Purpose::TakeUnique { .. }) =>
        {
            let write = Put {
                item: item.clone(),
                condition: condition.clone(),
            };
            Some((write, later.1, later.2))
        }
        (Put { item, .. }, Delete { condition, .. })
            if matches!(earlier.1, Purpose::TakeUnique { .. })
                && matches!(later.1, Purpose::FreeUnique) =>
        {
            let write = Put {
                item: item.clone(),
                condition: condition.clone(),
            };
            Some((write, earlier.1, earlier.2))
        }
        _ => None,
    }
}

/// Two checks or updates of the node at `key` (with their conditions `a` and `b`) as one: the
/// conditions joined, the changes merged, an update if either changes anything. `None` when
/// they cannot both hold or both change one attribute.
fn checks_and_updates(
    key: &Key,
    (a, earlier): (&[Clause], &Write),
    (b, later): (&[Clause], &Write),
) -> Option<Write> {
    // Two references that want different types of one node cannot both hold: the later one is
    // refused for what it is, not the earlier for what the later wants.
    if !types_meet(a, b) {
        return None;
    }
    let changes_of = |write: &Write| match write {
        Write::Update { changes, .. } => Some(changes.clone()),
        _ => None,
    };
    let changes = match (changes_of(earlier), changes_of(later)) {
        (Some(a), Some(b)) => Some(a.merged(&b)?),
        (a, b) => a.or(b),
    };
    let mut condition = a.to_vec();
    condition.extend(b.iter().filter(|clause| !a.contains(clause)).cloned());
    let key = key.clone();
    Some(match changes {
        Some(changes) => Write::Update {
            key,
            changes,
            condition,
        },
        None => Write::Check { key, condition },
    })
}

/// Adds `more` to `counts`, attribute by attribute.
fn add_counts(counts: &mut Vec<(String, i64)>, more: &[(String, i64)]) {
    for (attribute, delta) in more {
        match counts.iter_mut().find(|(name, _)| name == attribute) {
            Some((_, total)) => *total += delta,
            None => counts.push((attribute.clone(), *delta)),
        }
    }
}

/// `item` with the counts of `write` (an update of that item that only adds to them) added.
fn counted(item: &Item, write: &Write) -> Item {
    let mut item = item.clone();
    if let Write::Update { changes, .. } = write {
        changes.apply(&mut item);
    }
    item
}

/// Whether the `__typename` two conditions allow can be one type.
fn types_meet(a: &[Clause], b: &[Clause]) -> bool {
    let allowed = |condition: &[Clause]| -> Option<Vec<AttrValue>> {
        condition.iter().find_map(|clause| match clause {
            Clause::Equals(attribute, value) if attribute == TYPENAME => Some(vec![value.clone()]),
            Clause::OneOf(attribute, values) if attribute == TYPENAME => Some(values.clone()),
            _ => None,
        })
    };
    match (allowed(a), allowed(b)) {
        (Some(a), Some(b)) => a.iter().any(|t| b.contains(t)),
        _ => true,
    }
}

/// Whether a check or an update (`write`, with `condition`) of an item the plan puts whole says
/// nothing the put does not: it only adds to counts, and its condition holds on the item as
/// put.
fn implied(write: &Write, item: &Item, condition: &[Clause]) -> bool {
    if let Write::Update { changes, .. } = write
        && !changes.only_adds_numbers()
    {
        return false;
    }
    condition.iter().all(|clause| match clause {
        Clause::Exists => true,
        Clause::NotExists => false,
        Clause::Missing(attribute) => item.get(attribute).is_none(),
        Clause::Count(attribute, count) => {
            item.get(attribute).and_then(AttrValue::as_i64).unwrap_or(0) == *count
        }
        Clause::Equals(attribute, value) | Clause::AbsentOrEquals(attribute, value) => {
            item.get(attribute) == Some(value)
        }
        Clause::OneOf(attribute, values) => item
            .get(attribute)
            .is_some_and(|value| values.contains(value)),
        Clause::Holds(filter) => filter.matches(item),
    })
}

#[cfg(test)]
mod tests {
    use super::super::plan::{
        EDGE_SET, adjust_node, bare_node as node, join, node_update, version_is,
    };
    use super::*;
    use crate::engine::derive::LIST_COUNT;
    use crate::keys;
    use crate::store::Changes;

    fn is_type(typename: &str) -> Vec<Clause> {
        vec![Clause::OneOf(
            TYPENAME.to_owned(),
            vec![AttrValue::S(typename.to_owned())],
        )]
    }

    fn reference() -> Purpose {
        Purpose::Reference {
            field: "farmId".to_owned(),
            target: "Farm".to_owned(),
            id: "f".to_owned(),
        }
    }

    fn bump(id: &str, removed: &[&str]) -> Write {
        adjust_node(
            id,
            Vec::new(),
            Vec::new(),
            removed.iter().map(|entry| (*entry).to_owned()).collect(),
            vec![Clause::Exists],
        )
    }

    #[test]
    fn counts_on_one_item_add_up_and_go_into_a_put_of_it() {
        let counting = |id: &str, delta: i64| {
            adjust_node(
                id,
                vec![("count#GSI01#Cow".to_owned(), delta)],
                Vec::new(),
                Vec::new(),
                vec![Clause::Exists],
            )
        };
        let tally = |delta: i64| Write::Tally {
            key: Key::same(keys::list_count_key("Cow", 1)),
            typename: keys::list_count_typename("Cow"),
            counts: vec![(LIST_COUNT.to_owned(), delta)],
        };
        let mut plan = Plan::default();
        plan.push(counting("a", 1), Purpose::Node);
        plan.push(counting("a", 1), Purpose::Count { id: "a".to_owned() });
        plan.push(tally(1), Purpose::Node);
        plan.push(tally(-1), Purpose::Node);
        plan.push(tally(1), Purpose::Node);
        let folded = plan.folded().expect("folds");
        let [
            Write::Update {
                changes: Changes { add: bumped, .. },
                ..
            },
            Write::Tally {
                counts: tallied, ..
            },
        ] = folded.writes.as_slice()
        else {
            panic!("one bump and one tally: {:?}", folded.writes);
        };
        assert_eq!(bumped, &[("count#GSI01#Cow".to_owned(), 2)]);
        assert_eq!(tallied, &[(LIST_COUNT.to_owned(), 1)]);

        // A node that is its own parent: the count goes into the node as put.
        let mut own = node("f", "Farm");
        own.insert("count#GSI01#Cow".to_owned(), AttrValue::N("4".to_owned()));
        let mut plan = Plan::default();
        plan.push(
            Write::Put {
                item: own,
                condition: vec![version_is(&Item::new(), 3)],
            },
            Purpose::Node,
        );
        plan.push(counting("f", -1), Purpose::Count { id: "f".to_owned() });
        let folded = plan.folded().expect("folds");
        let [Write::Put { item, .. }] = folded.writes.as_slice() else {
            panic!("one put: {:?}", folded.writes);
        };
        assert_eq!(
            item.get("count#GSI01#Cow"),
            Some(&AttrValue::N("3".to_owned()))
        );
        // Counted down on a node the plan deletes: the delete is all.
        let mut plan = Plan::default();
        plan.push(
            Write::Delete {
                key: Key::same(keys::node_key("f")),
                condition: vec![version_is(&Item::new(), 3)],
            },
            Purpose::Node,
        );
        plan.push(counting("f", -1), Purpose::Count { id: "f".to_owned() });
        let folded = plan.folded().expect("folds");
        assert!(matches!(folded.writes.as_slice(), [Write::Delete { .. }]));
    }

    #[test]
    fn a_check_of_a_node_put_in_the_same_plan_is_implied_only_when_its_type_matches() {
        let mut plan = Plan::default();
        plan.push(
            Write::Put {
                item: node("f", "Farm"),
                condition: vec![Clause::NotExists],
            },
            Purpose::Node,
        );
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key("f")),
                condition: is_type("Farm"),
            },
            reference(),
        );
        let folded = plan.folded().expect("folds");
        assert_eq!(folded.len(), 1);
        assert!(matches!(folded.writes[0], Write::Put { .. }));

        let mut plan = Plan::default();
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key("f")),
                condition: is_type("Image"),
            },
            reference(),
        );
        plan.push(
            Write::Put {
                item: node("f", "Farm"),
                condition: vec![Clause::NotExists],
            },
            Purpose::Node,
        );
        assert!(plan.folded().is_err(), "a Farm is no Image");
    }

    #[test]
    fn bumps_and_checks_of_one_node_merge_their_removals_and_conditions() {
        let mut plan = Plan::default();
        plan.push(bump("g", &["A#1"]), Purpose::Node);
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key("g")),
                condition: is_type("Goal"),
            },
            reference(),
        );
        plan.push(bump("g", &["A#2"]), Purpose::Node);
        let folded = plan.folded().expect("folds");
        let [
            Write::Update {
                changes, condition, ..
            },
        ] = folded.writes.as_slice()
        else {
            panic!("one bump: {:?}", folded.writes);
        };
        assert_eq!(
            changes.take_from_set,
            [(
                EDGE_SET.to_owned(),
                vec!["A#1".to_owned(), "A#2".to_owned()]
            )]
        );
        assert_eq!(
            condition.len(),
            2,
            "Exists once, and the type: {condition:?}"
        );
    }

    #[test]
    fn a_deleted_node_needs_no_bump_and_an_edge_deleted_from_both_ends_is_deleted_once() {
        let edge = Key {
            pk: keys::node_key("a"),
            sk: keys::edge_sort_key("Friend", "b"),
        };
        let delete = |key: &Key| Write::Delete {
            key: key.clone(),
            condition: vec![Clause::Equals(
                "updatedAt".to_owned(),
                AttrValue::S("t".to_owned()),
            )],
        };
        let mut plan = Plan::default();
        plan.push(delete(&Key::same(keys::node_key("a"))), Purpose::Node);
        plan.push(delete(&edge), Purpose::Edge);
        plan.append_as(
            {
                let mut other = Plan::default();
                other.push(bump("a", &["Friend#b"]), Purpose::Node);
                other.push(delete(&edge), Purpose::Edge);
                other
            },
            1,
        );
        let folded = plan.folded().expect("folds");
        assert_eq!(folded.len(), 2);
        assert!(
            folded
                .writes
                .iter()
                .all(|write| matches!(write, Write::Delete { .. }))
        );
    }

    #[test]
    fn a_unique_value_freed_by_one_part_and_taken_by_another_changes_hands_in_one_put() {
        let key = Key::same("UNIQUE#Farm#name#alpha".to_owned());
        let take = Write::Put {
            item: Item::from_iter([
                (keys::PK.to_owned(), AttrValue::S(key.pk.clone())),
                (keys::SK.to_owned(), AttrValue::S(key.sk.clone())),
                ("id".to_owned(), AttrValue::S("b".to_owned())),
            ]),
            condition: vec![Clause::NotExists],
        };
        let taking = Purpose::TakeUnique {
            type_name: "Farm".to_owned(),
            field: "name".to_owned(),
        };
        let free = Write::Delete {
            key,
            condition: vec![Clause::AbsentOrEquals(
                "id".to_owned(),
                AttrValue::S("a".to_owned()),
            )],
        };
        let mut plan = Plan::default();
        plan.push(take.clone(), taking.clone());
        plan.append_as(
            {
                let mut other = Plan::default();
                other.push(free, Purpose::FreeUnique);
                other
            },
            1,
        );
        let folded = plan.folded().expect("folds");
        let [Write::Put { item, condition }] = folded.writes.as_slice() else {
            panic!("one put: {:?}", folded.writes);
        };
        assert_eq!(item.get("id"), Some(&AttrValue::S("b".to_owned())));
        assert_eq!(
            condition,
            &[Clause::AbsentOrEquals(
                "id".to_owned(),
                AttrValue::S("a".to_owned())
            )]
        );
        assert_eq!(folded.parts, [0], "the taker's part answers for it");

        let mut plan = Plan::default();
        plan.push(take.clone(), taking.clone());
        plan.append_as(
            {
                let mut other = Plan::default();
                other.push(take, taking);
                other
            },
            1,
        );
        let clash = plan.folded().err().expect("one value taken twice");
        assert_eq!((clash.first, clash.second), (0, 1));
        assert!(matches!(clash.purpose, Purpose::TakeUnique { .. }));
    }

    #[test]
    fn one_edge_read_twice_at_different_times_is_deleted_once_on_both_conditions() {
        let edge = Key {
            pk: keys::node_key("a"),
            sk: keys::edge_sort_key("Friend", "b"),
        };
        let read_at = |time: &str| Write::Delete {
            key: edge.clone(),
            condition: vec![Clause::Equals(
                "updatedAt".to_owned(),
                AttrValue::S(time.to_owned()),
            )],
        };
        let mut plan = Plan::default();
        plan.push(read_at("t1"), Purpose::Edge);
        plan.push(read_at("t2"), Purpose::Edge);
        let folded = plan.folded().expect("folds");
        let [Write::Delete { condition, .. }] = folded.writes.as_slice() else {
            panic!("one delete: {:?}", folded.writes);
        };
        assert_eq!(
            condition.len(),
            2,
            "fails, and is read again, unless both hold"
        );
    }

    #[test]
    fn references_wanting_different_types_or_a_put_over_edge_set_removals_clash() {
        let mut plan = Plan::default();
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key("u")),
                condition: is_type("User"),
            },
            reference(),
        );
        plan.push(
            Write::Check {
                key: Key::same(keys::node_key("u")),
                condition: is_type("Goal"),
            },
            Purpose::Reference {
                field: "parentId".to_owned(),
                target: "Goal".to_owned(),
                id: "u".to_owned(),
            },
        );
        let clash = plan.folded().err().expect("no node is both");
        assert!(
            matches!(&clash.purpose, Purpose::Reference { field, .. } if field == "parentId"),
            "the later reference is the one refused: {clash:?}"
        );

        let mut plan = Plan::default();
        plan.push(
            Write::Put {
                item: node("g", "Goal"),
                condition: vec![Clause::NotExists],
            },
            Purpose::Node,
        );
        plan.push(bump("g", &["A#1"]), Purpose::Node);
        assert!(plan.folded().is_err(), "the put would keep the entry");
    }

    #[test]
    fn bumps_that_add_to_an_edge_set_merge_but_never_with_ones_that_take_from_it() {
        let adding = |entry: &str| {
            adjust_node(
                "g",
                Vec::new(),
                vec![entry.to_owned()],
                Vec::new(),
                vec![Clause::Exists],
            )
        };
        let mut plan = Plan::default();
        plan.push(adding("A#1"), Purpose::Node);
        plan.push(adding("A#2"), Purpose::Node);
        let folded = plan.folded().expect("folds");
        let [Write::Update { changes, .. }] = folded.writes.as_slice() else {
            panic!("one bump: {:?}", folded.writes);
        };
        assert_eq!(
            changes.add_to_set,
            [(
                EDGE_SET.to_owned(),
                vec!["A#1".to_owned(), "A#2".to_owned()]
            )]
        );

        let mut plan = Plan::default();
        plan.push(adding("A#1"), Purpose::Node);
        plan.push(bump("g", &["A#2"]), Purpose::Node);
        assert!(plan.folded().is_err(), "one update cannot do both");
    }

    /// A batch moves a node out of a parent (part 0) and updates that parent (part 1): the
    /// count taken from it and its update are one write, and a failure of it is the update's,
    /// a lost race to read again, not the parent gone (which would drop the count for good).
    #[test]
    fn a_count_and_the_update_of_one_node_fail_as_the_update() {
        let mut current = node("p", "Farm");
        current.insert("version".to_owned(), AttrValue::N("3".to_owned()));
        let mut next = current.clone();
        next.insert("name".to_owned(), AttrValue::S("x".to_owned()));
        let counting = adjust_node(
            "p",
            vec![("count#GSI01#Cow".to_owned(), -1)],
            Vec::new(),
            Vec::new(),
            vec![Clause::Exists],
        );
        let mut first = Plan::default();
        first.push(counting, Purpose::Count { id: "p".to_owned() });
        let mut second = Plan::default();
        second.push(
            node_update(&current, &next, vec![version_is(&current, 3)]),
            Purpose::Node,
        );
        let folded = join(vec![first, second], true).expect("folds");
        assert_eq!(folded.writes.len(), 1);
        assert!(
            matches!(folded.purposes[0], Purpose::Node),
            "{:?}",
            folded.purposes
        );
        assert_eq!(folded.parts[0], 1);
    }
}
