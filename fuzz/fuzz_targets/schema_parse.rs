//! Arbitrary UTF-8 text into `Model::parse`, the reader and validator of `schema.graphql`.
//!
//! Properties:
//! - it never panics (nor overflows the stack);
//! - an error names the file and a line and column inside the text, and prints as
//!   `file:LINE:COL: message`;
//! - a model it accepts keeps the invariants `src/model/mod.rs` states ("a `Model` that exists
//!   is consistent"): relations name existing types, fields and edges; no two relations or
//!   indexes of one type share a slot; `indexes` is every slot in use, ascending; ranks fit
//!   three digits;
//! - the GraphQL schema can be built from every model it accepts (the rest of the server trusts
//!   the model and never re-checks it).

#![no_main]

use std::collections::BTreeSet;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use tablegraph::changes::EventHub;
use tablegraph::graphql::{Api, SchemaOptions};
use tablegraph::model::{FieldKind, Model};

const FILE: &str = "schema.graphql";

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    match Model::parse(FILE, source) {
        Ok(model) => {
            check_model(&model);
            let built = Api::build(
                Arc::new(model),
                &SchemaOptions::default(),
                EventHub::default(),
            );
            if let Err(e) = built {
                panic!("the model was accepted but the GraphQL schema is not: {e:?}");
            }
        }
        Err(error) => {
            assert_eq!(error.file, FILE);
            assert!(!error.message.is_empty(), "{error:?}: no message");
            assert!(
                error.line >= 1 && error.column >= 1,
                "{error:?}: lines and columns count from 1"
            );
            // Positions come from the GraphQL parser, which counts `\n` line breaks; an error at
            // the end of the text is still on its last line.
            let lines = source.split('\n').count();
            assert!(
                error.line <= lines,
                "{error:?}: line past the end ({lines} lines)"
            );
            let prefix = format!("{FILE}:{}:{}: ", error.line, error.column);
            assert!(error.to_string().starts_with(&prefix), "{error}");
        }
    }
});

fn check_model(model: &Model) {
    assert!(!model.types.is_empty(), "a model without @model types");
    let is_node_type =
        |name: &str| model.type_def(name).is_some() || model.union_def(name).is_some();

    let mut names = BTreeSet::new();
    let all_names = model
        .types
        .iter()
        .map(|t| &t.name)
        .chain(model.unions.iter().map(|u| &u.name))
        .chain(model.enums.iter().map(|e| &e.name))
        .chain(model.edges.iter().map(|e| &e.name));
    for name in all_names {
        assert!(names.insert(name.as_str()), "{name} is declared twice");
        assert!(!name.contains('#'), "{name} would break keys");
    }

    assert!(
        model.indexes.windows(2).all(|w| w[0] < w[1]),
        "indexes not ascending: {:?}",
        model.indexes
    );
    assert!(
        model.indexes.iter().all(|slot| (1..=20).contains(slot)),
        "indexes out of range: {:?}",
        model.indexes
    );
    let mut used = BTreeSet::new();

    for union in &model.unions {
        for member in &union.members {
            assert!(
                model.type_def(member).is_some(),
                "union {} holds {member}",
                union.name
            );
        }
    }
    for enum_def in &model.enums {
        let ranked = enum_def.values.iter().filter(|v| v.rank.is_some()).count();
        assert!(
            ranked == 0 || ranked == enum_def.values.len(),
            "{} partly ranked",
            enum_def.name
        );
        for value in &enum_def.values {
            assert!(
                value.rank.is_none_or(|rank| rank <= 999),
                "{}.{} rank",
                enum_def.name,
                value.name
            );
        }
    }
    for edge in &model.edges {
        assert!(
            model.type_def(&edge.from).is_some(),
            "edge {} from {}",
            edge.name,
            edge.from
        );
        assert!(is_node_type(&edge.to), "edge {} to {}", edge.name, edge.to);
        if let Some(sort_by) = &edge.sort_by {
            assert!(
                edge.field(sort_by).is_some(),
                "edge {} sorts by {sort_by}",
                edge.name
            );
        }
        used.insert(edge.slot);
    }
    for type_def in &model.types {
        let mut slots = BTreeSet::new();
        // Its type index and its fields' `@index`es each take a slot its nodes use for nothing
        // else.
        let own = type_def.list.iter().map(|list| list.slot);
        for slot in own.chain(type_def.indexes.iter().map(|index| index.slot)) {
            assert!(
                slots.insert(slot),
                "{} uses slot {slot} for two indexes",
                type_def.name
            );
            used.insert(slot);
        }
        for index in &type_def.indexes {
            assert!(
                type_def.field(&index.field).is_some(),
                "{} indexes no field {}",
                type_def.name,
                index.field
            );
        }
        for slot in &type_def.slots {
            assert!(
                slots.insert(slot.slot),
                "{} writes slot {} twice",
                type_def.name,
                slot.slot
            );
            used.insert(slot.slot);
            assert!(is_node_type(&slot.element));
            assert!(type_def.field(&slot.foreign_key).is_some());
            if let Some(sort_by) = &slot.sort_by {
                assert!(
                    type_def.field(sort_by).is_some(),
                    "{} has no {sort_by}",
                    type_def.name
                );
            }
        }
        for field in &type_def.fields {
            let here = format!("{}.{}", type_def.name, field.name);
            match &field.kind {
                FieldKind::Scalar { .. } | FieldKind::ScalarList { .. } => {}
                FieldKind::Embedded { object, .. } => {
                    assert!(model.object_def(object).is_some(), "{here}: {object}");
                }
                FieldKind::Custom(_) => {
                    panic!("{here}: a custom field without any resolver file")
                }
                FieldKind::BelongsTo {
                    target,
                    foreign_key,
                    ..
                } => {
                    assert!(is_node_type(target), "{here}: {target}");
                    assert!(
                        type_def.field(foreign_key).is_some(),
                        "{here}: {foreign_key}"
                    );
                }
                FieldKind::HasMany(has_many) => {
                    assert!(is_node_type(&has_many.element), "{here}");
                    assert!(model.indexes.contains(&has_many.slot), "{here}: slot");
                    for member in model.possible_types(&has_many.element) {
                        let member_def = model.type_def(member).expect("checked above");
                        assert!(
                            member_def
                                .slots
                                .iter()
                                .any(|s| s.slot == has_many.slot && s.element == has_many.element),
                            "{here}: {member} does not write slot {}",
                            has_many.slot
                        );
                    }
                }
                FieldKind::Outgoing { edge, element }
                | FieldKind::Incoming { edge, element }
                | FieldKind::Targets { edge, element, .. } => {
                    assert!(model.edge_def(edge).is_some(), "{here}: edge {edge}");
                    assert!(is_node_type(element), "{here}: {element}");
                }
            }
        }
    }
    assert_eq!(
        used.into_iter().collect::<Vec<_>>(),
        model.indexes,
        "indexes are not the slots in use"
    );
}
