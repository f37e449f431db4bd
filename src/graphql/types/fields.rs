//! Fields that read one stored attribute of the item their parent value holds: a node's
//! scalar fields, an edge's metadata, a Relay edge's edge fields.

use async_graphql::dynamic::{Field, FieldFuture};

use crate::engine::Item;
use crate::engine::read::Node;
use crate::graphql::values::scalars::{list_type_ref, scalar_type_ref};
use crate::graphql::values::{list_to_graphql, to_graphql};
use crate::model::ScalarType;

/// A field that reads one stored attribute of the item held by its parent value, a `P`.
pub(in crate::graphql) fn attribute_field<P: std::any::Any>(
    name: &str,
    scalar: ScalarType,
    required: bool,
    item_of: fn(&P) -> Option<&Item>,
) -> Field {
    let attribute = name.to_owned();
    let ty = scalar_type_ref(&scalar, required);
    Field::new(name, ty, move |ctx| {
        let value = ctx
            .parent_value
            .downcast_ref::<P>()
            .and_then(item_of)
            .and_then(|item| to_graphql(item.get(&attribute), &scalar));
        FieldFuture::from_value(value)
    })
}

/// A field that reads one stored attribute of the parent node.
pub(in crate::graphql) fn stored_field(name: &str, scalar: ScalarType, required: bool) -> Field {
    attribute_field::<Node>(name, scalar, required, |node| Some(&node.item))
}

/// A field that reads a stored list of scalars of the item held by its parent value, a `P`.
pub(in crate::graphql) fn list_attribute_field<P: std::any::Any>(
    name: &str,
    scalar: ScalarType,
    required: bool,
    elements_required: bool,
    item_of: fn(&P) -> Option<&Item>,
) -> Field {
    let attribute = name.to_owned();
    Field::new(
        name,
        list_type_ref(&scalar, required, elements_required),
        move |ctx| {
            let value = ctx
                .parent_value
                .downcast_ref::<P>()
                .and_then(item_of)
                .and_then(|item| list_to_graphql(item.get(&attribute), &scalar));
            FieldFuture::from_value(value)
        },
    )
}

/// A field that reads a stored list of scalars of the parent node.
pub(in crate::graphql) fn stored_list_field(
    name: &str,
    scalar: ScalarType,
    required: bool,
    elements_required: bool,
) -> Field {
    list_attribute_field::<Node>(name, scalar, required, elements_required, |node| {
        Some(&node.item)
    })
}
