//! Relations between types, checked once every type is read: `@belongsTo` and `@hasMany` that
//! share a relation slot (the slots Amplify's forms leave open chosen here), and `@edge` types.

use super::amplify::AUTO_SLOT;
use super::{
    MANAGED_EDGE_FIELDS, MAX_SLOT, Names, PendingRelation, Reader, description,
    is_reserved_attribute, parse_slot,
};
use crate::model::auth_rules::APPSYNC_DIRECTIVES;
use crate::model::{EdgeTypeDef, FieldDef, FieldKind, Model, ModelError, ScalarType, SlotDef};
use async_graphql_parser::types::{BaseType, ConstDirective, TypeDefinition, TypeKind};
use async_graphql_parser::{Pos, Positioned};
use async_graphql_value::ConstValue;
use std::collections::{BTreeMap, BTreeSet};

impl Reader<'_> {
    pub(super) fn check_relations(
        &self,
        model: &mut Model,
        relations: &[PendingRelation],
    ) -> Result<(), ModelError> {
        // (member type, slot) → the relation that makes it write that slot.
        let mut slot_users: BTreeMap<(String, u8), String> = BTreeMap::new();
        let mut slots: Vec<(String, SlotDef)> = Vec::new();
        for relation in relations {
            let owner = model
                .type_def(&relation.owner)
                .expect("pending relations name read types");
            let field = owner
                .field(&relation.field)
                .expect("pending relations name read fields");
            let here = format!("{}.{}", relation.owner, relation.field);
            self.check_relation_parent(model, relation, field)?;
            match &field.kind {
                FieldKind::BelongsTo {
                    target,
                    foreign_key,
                    required,
                } => {
                    let key_field = owner.field(foreign_key);
                    // A type keyed by a text field of its own (`@primaryKey`) is named by text.
                    let keyed_by_text = model
                        .type_def(target)
                        .is_some_and(|t| matches!(t.primary_key, Some((_, ScalarType::String))));
                    match key_field.map(|f| &f.kind) {
                        Some(FieldKind::Scalar {
                            scalar,
                            required: key_required,
                            ..
                        }) if *scalar == ScalarType::Id
                            || (keyed_by_text && *scalar == ScalarType::String) =>
                        {
                            if *required && !key_required {
                                return Err(self.error(
                                    relation.pos,
                                    format!(
                                        "{here} is non-null, so {}.{foreign_key} must be ID!",
                                        relation.owner
                                    ),
                                ));
                            }
                        }
                        _ => {
                            return Err(self.error(
                                relation.pos,
                                format!("{here}: @belongsTo(field: {foreign_key:?}) needs a field `{foreign_key}: ID` on {}", relation.owner),
                            ));
                        }
                    }
                }
                FieldKind::HasMany(has_many) => {
                    let mut sort_scalar: Option<&ScalarType> = None;
                    for member in model.possible_types(&has_many.element) {
                        let member_def = model.type_def(member).expect("unions hold model types");
                        let keyed_by_text = model.type_def(&relation.owner).is_some_and(|t| {
                            matches!(t.primary_key, Some((_, ScalarType::String)))
                        });
                        match member_def
                            .field(&has_many.foreign_key)
                            .and_then(FieldDef::scalar)
                        {
                            Some(ScalarType::Id) => {}
                            Some(ScalarType::String) if keyed_by_text => {}
                            _ => {
                                return Err(self.error(
                                    relation.pos,
                                    format!("{here}: @hasMany(field: {:?}) needs a field `{}: ID` on {member}", has_many.foreign_key, has_many.foreign_key),
                                ));
                            }
                        }
                        if let Some(sort_by) = &has_many.sort_by {
                            let Some(scalar) = member_def.field(sort_by).and_then(FieldDef::scalar)
                            else {
                                return Err(self.error(
                                    relation.pos,
                                    format!("{here}: sortBy {sort_by:?} needs a scalar field {sort_by} on {member}"),
                                ));
                            };
                            if sort_scalar.is_some_and(|first| first != scalar) {
                                return Err(self.error(
                                    relation.pos,
                                    format!("{here}: the members of {} sort by {sort_by} fields of different types", has_many.element),
                                ));
                            }
                            sort_scalar = Some(scalar);
                        }
                        if has_many.slot == AUTO_SLOT {
                            // Chosen below, once the explicit slots, lists and indexes hold theirs.
                            continue;
                        }
                        let key = (member.to_owned(), has_many.slot);
                        if let Some(previous) = slot_users.get(&key) {
                            return Err(self.error(
                                relation.pos,
                                format!(
                                    "{here}: {member} already writes slot GSI{:02} for {previous}; choose another index",
                                    has_many.slot
                                ),
                            ));
                        }
                        slot_users.insert(key, here.clone());
                        slots.push((
                            member.to_owned(),
                            SlotDef {
                                slot: has_many.slot,
                                element: has_many.element.clone(),
                                foreign_key: has_many.foreign_key.clone(),
                                sort_by: has_many.sort_by.clone(),
                            },
                        ));
                    }
                }
                FieldKind::Outgoing { edge, element } => {
                    let edge_def = self.edge_named(model, edge, relation.pos, &here)?;
                    if edge_def.from != relation.owner || edge_def.to != *element {
                        return Err(self.error(
                            relation.pos,
                            format!(
                                "{here}: {edge} goes from {} to {}, so @outgoing(edge: {edge:?}) belongs on {} as [{}]",
                                edge_def.from, edge_def.to, edge_def.from, edge_def.to
                            ),
                        ));
                    }
                }
                FieldKind::Incoming { edge, element } => {
                    let edge_def = self.edge_named(model, edge, relation.pos, &here)?;
                    let reaches_owner = model
                        .possible_types(&edge_def.to)
                        .contains(&relation.owner.as_str());
                    if !reaches_owner || edge_def.from != *element {
                        return Err(self.error(
                            relation.pos,
                            format!(
                                "{here}: {edge} goes from {} to {}, so @incoming(edge: {edge:?}) belongs on {} as [{}]",
                                edge_def.from, edge_def.to, edge_def.to, edge_def.from
                            ),
                        ));
                    }
                }
                FieldKind::Targets {
                    edge,
                    element,
                    role,
                } => {
                    let edge_def = self.edge_named(model, edge, relation.pos, &here)?;
                    if edge_def.from != relation.owner {
                        return Err(self.error(
                            relation.pos,
                            format!(
                                "{here}: {edge} starts from {}, not {}",
                                edge_def.from, relation.owner
                            ),
                        ));
                    }
                    if !edge_def.edge_set {
                        return Err(self.error(
                            relation.pos,
                            format!("{here}: {edge} is kept out of the edge set (edgeSet: false), so @targets cannot read it"),
                        ));
                    }
                    let reachable = model.possible_types(&edge_def.to);
                    if let Some(stranger) = model
                        .possible_types(element)
                        .into_iter()
                        .find(|t| !reachable.contains(t))
                    {
                        return Err(self.error(
                            relation.pos,
                            format!("{here}: {edge} never points to {stranger}"),
                        ));
                    }
                    if let Some(role) = role {
                        let values = match edge_def.sort_scalar() {
                            Some(ScalarType::Enum(enum_name)) => model.enum_def(enum_name),
                            _ => None,
                        };
                        match values {
                            None => {
                                return Err(self.error(
                                    relation.pos,
                                    format!("{here}: role: needs {edge} to sort by an enum field"),
                                ));
                            }
                            Some(values) if !values.values.iter().any(|v| v.name == *role) => {
                                return Err(self.error(
                                    relation.pos,
                                    format!("{here}: {role} is not a value of {}", values.name),
                                ));
                            }
                            Some(_) => {}
                        }
                    }
                }
                FieldKind::Scalar { .. }
                | FieldKind::ScalarList { .. }
                | FieldKind::Embedded { .. }
                | FieldKind::Custom(_)
                | FieldKind::Function { .. } => {
                    unreachable!("pending relations are relation fields")
                }
            }
        }
        for (member, slot) in slots {
            model
                .types
                .iter_mut()
                .find(|t| t.name == member)
                .expect("slot members are model types")
                .slots
                .push(slot);
        }
        if let Some((key, slot)) = self
            .slot_pins
            .iter()
            .find(|(_, slot)| !(1..=MAX_SLOT).contains(*slot))
        {
            return Err(self.error(
                Pos::default(),
                format!(
                    "slots.lock pins {key} to {slot}, which is no index slot (1 to {MAX_SLOT})"
                ),
            ));
        }
        let mut chosen: BTreeMap<String, u8> = BTreeMap::new();
        for type_def in &mut model.types {
            type_def.slots.sort_by_key(|s| s.slot);
            let written: Vec<u8> = type_def.slots.iter().map(|s| s.slot).collect();
            // A slot a relation writes by `index:` is no slot the lock pins for something else
            // of the type: its items may still be there.
            if let Some((key, slot)) = self
                .slot_pins
                .iter()
                .find(|(key, slot)| written.contains(slot) && pinned_for(key, &type_def.name))
            {
                return Err(self.error(
                    Pos::default(),
                    format!(
                        "type {}: a relation writes slot GSI{slot:02}, which slots.lock pins for \
                         {key}; give the relation another index (or, once nothing of {key} is \
                         stored, remove its line from slots.lock)",
                        type_def.name
                    ),
                ));
            }
            // The slots the lock file pins for this type's keys: none of them is chosen for
            // another key (a key the schema dropped keeps its slot, and the items in it).
            let pins = self.pins_of(&type_def.name);
            let mut taken = written.clone();
            // The type index, then each `@index` in turn: the slot pinned for it, or the lowest
            // slot the type's nodes use for nothing else (an index that exists already
            // whenever one is free).
            let mut wanted: Vec<(String, String)> = Vec::new();
            if type_def.list.is_some() {
                wanted.push((
                    list_key(&type_def.name),
                    format!("list{}", crate::model::plural(&type_def.name)),
                ));
            }
            for index in &type_def.indexes {
                wanted.push((
                    index_key(&type_def.name, &index.name),
                    format!("@index {}", index.name),
                ));
            }
            let mut slots = Vec::new();
            for (key, what) in &wanted {
                let slot = match self.slot_pins.get(key) {
                    Some(pinned) if written.contains(pinned) => {
                        return Err(self.error(
                            Pos::default(),
                            format!(
                                "type {}: slots.lock pins slot GSI{pinned:02} for {what}, \
                                 and a relation writes it too; give the relation another index",
                                type_def.name
                            ),
                        ));
                    }
                    Some(pinned) => *pinned,
                    None => (1..=u8::MAX)
                        .find(|n| !taken.contains(n) && !pins.contains(n))
                        .expect("a type uses fewer than 255 slots"),
                };
                if slot > MAX_SLOT {
                    let hint = if what.starts_with("list") {
                        "; give it @model(list: false)"
                    } else {
                        ""
                    };
                    return Err(self.error(
                        Pos::default(),
                        format!(
                            "type {}: its relations and indexes use every index slot, none is \
                             left for {what}{hint}",
                            type_def.name
                        ),
                    ));
                }
                taken.push(slot);
                chosen.insert(key.clone(), slot);
                slots.push(slot);
            }
            let mut slots = slots.into_iter();
            if let Some(list) = &mut type_def.list {
                list.slot = slots.next().expect("a slot was chosen for the list");
            }
            for index in &mut type_def.indexes {
                index.slot = slots.next().expect("a slot was chosen for each index");
            }
        }
        self.choose_relation_slots(model, relations, &mut chosen)?;
        model.slot_pins = chosen;
        // A mutation is one name among the root's too: a renamed one (`@model(mutations:)`)
        // may not take a generated one's.
        let mut mutations: Vec<String> = model
            .edges
            .iter()
            .flat_map(|e| [format!("add{}", e.name), format!("remove{}", e.name)])
            .collect();
        for type_def in &model.types {
            let plural = crate::model::plural(&type_def.name);
            let roots = &type_def.roots;
            let names = [
                (&roots.create, "create"),
                (&roots.update, "update"),
                (&roots.delete, "delete"),
            ]
            .into_iter()
            .filter_map(|(single, verb)| {
                single
                    .as_ref()
                    .map(|single| [single.clone(), format!("{verb}{plural}")])
            })
            .flatten();
            for name in names {
                if mutations.contains(&name) {
                    return Err(self.error(
                        Pos::default(),
                        format!(
                            "type {}: {name} is already a field of Mutation",
                            type_def.name
                        ),
                    ));
                }
                mutations.push(name);
            }
        }
        // A query field is one name among the root's.
        let mut roots: Vec<String> = vec!["node".to_owned(), "nodes".to_owned()];
        for type_def in &model.types {
            for name in [&type_def.roots.get, &type_def.roots.list]
                .into_iter()
                .flatten()
            {
                if roots.contains(name) {
                    return Err(self.error(
                        Pos::default(),
                        format!("type {}: {name} is already a field of Query", type_def.name),
                    ));
                }
                roots.push(name.clone());
            }
            for field in type_def.unique_fields() {
                roots.push(format!(
                    "{}By{}",
                    crate::model::lower_first(&type_def.name),
                    crate::model::upper_first(&field.name)
                ));
            }
        }
        for type_def in &model.types {
            for query_field in type_def
                .indexes
                .iter()
                .filter_map(|i| i.query_field.as_ref())
            {
                if roots.contains(query_field) {
                    return Err(self.error(
                        Pos::default(),
                        format!(
                            "{}: @index queryField {query_field} is already a field of Query",
                            type_def.name
                        ),
                    ));
                }
                roots.push(query_field.clone());
            }
        }
        let indexes: BTreeSet<u8> = slot_users
            .keys()
            .map(|(_, slot)| *slot)
            .chain(
                model
                    .types
                    .iter()
                    .flat_map(|t| t.slots.iter().map(|s| s.slot)),
            )
            .chain(model.edges.iter().map(|e| e.slot))
            .chain(model.types.iter().filter_map(|t| t.list.map(|l| l.slot)))
            .chain(
                model
                    .types
                    .iter()
                    .flat_map(|t| t.indexes.iter().map(|i| i.slot)),
            )
            .collect();
        model.indexes = indexes.into_iter().collect();
        Ok(())
    }

    pub(super) fn edge_named<'m>(
        &self,
        model: &'m Model,
        edge: &str,
        pos: Pos,
        here: &str,
    ) -> Result<&'m EdgeTypeDef, ModelError> {
        model
            .edge_def(edge)
            .ok_or_else(|| self.error(pos, format!("{here}: there is no @edge type {edge}")))
    }

    /// Reads an `@edge` type: its endpoints, options and metadata fields.
    pub(super) fn read_edge(
        &self,
        definition: &Positioned<TypeDefinition>,
        names: &Names<'_>,
    ) -> Result<EdgeTypeDef, ModelError> {
        let name = definition.node.name.node.to_string();
        let TypeKind::Object(kind) = &definition.node.kind else {
            unreachable!("read_edge is only called for object types");
        };
        let mut edge_directive = None;
        for directive in &definition.node.directives {
            match directive.node.name.node.as_str() {
                "edge" => {
                    self.expect_arguments(
                        directive,
                        &["from", "to", "sortBy", "edgeSet", "index"],
                    )?;
                    edge_directive = Some(directive);
                }
                "model" => {
                    return Err(self.error(
                        directive.pos,
                        format!("type {name}: an @edge type is not also a @model"),
                    ));
                }
                other => return Err(self.unknown_directive(directive.pos, other)),
            }
        }
        let directive = edge_directive.expect("read_edge is only called for @edge types");
        let from = self.string_argument(directive, "from")?;
        let to = self.string_argument(directive, "to")?;
        if !names.models.contains(from.as_str()) {
            return Err(self.error(
                directive.pos,
                format!("@edge(from: {from:?}): {from} is not a @model type"),
            ));
        }
        if !names.is_node_type(&to) {
            return Err(self.error(
                directive.pos,
                format!("@edge(to: {to:?}): {to} is not a @model type or a union of them"),
            ));
        }
        let edge_set = match directive.node.get_argument("edgeSet").map(|v| &v.node) {
            None => true,
            Some(ConstValue::Boolean(keep)) => *keep,
            Some(_) => {
                return Err(self.error(directive.pos, "@edge(edgeSet:) takes true or false"));
            }
        };
        let index = self
            .optional_string_argument(directive, "index")?
            .unwrap_or_else(|| "GSI01".to_owned());
        let slot = parse_slot(&index).ok_or_else(|| {
            self.error(
                directive.pos,
                format!(
                    "{name}: index must be one of \"GSI01\" to \"GSI{MAX_SLOT}\", not {index:?}"
                ),
            )
        })?;
        let mut fields = Vec::new();
        for field in &kind.fields {
            let field_name = field.node.name.node.to_string();
            if MANAGED_EDGE_FIELDS.contains(&field_name.as_str())
                || is_reserved_attribute(&field_name)
            {
                return Err(self.error(
                    field.pos,
                    format!("{name}.{field_name}: the name {field_name} is managed by @edge"),
                ));
            }
            // AppSync asks non-model types to repeat the auth modes that reach them; here their
            // values are read with the node that holds them, under that node's rules.
            let not_appsync = |d: &&Positioned<ConstDirective>| {
                !APPSYNC_DIRECTIVES.contains(&d.node.name.node.as_str())
            };
            if let Some(directive) = field.node.directives.iter().find(not_appsync) {
                return Err(self.error(
                    directive.pos,
                    format!("{name}.{field_name}: edge metadata fields take no directives"),
                ));
            }
            let ty = &field.node.ty.node;
            let scalar = match &ty.base {
                BaseType::Named(type_name) => names.scalar(type_name),
                BaseType::List(_) => None,
            };
            let Some(scalar) = scalar else {
                return Err(self.error(
                    field.node.ty.pos,
                    format!("{name}.{field_name}: edge metadata fields are scalars or enums"),
                ));
            };
            fields.push(FieldDef {
                name: field_name,
                description: description(field.node.description.as_ref()),
                kind: FieldKind::Scalar {
                    scalar,
                    required: !ty.nullable,
                    unique: false,
                    default: None,
                },
                auth: Vec::new(),
            });
        }
        let sort_by = self.optional_string_argument(directive, "sortBy")?;
        if let Some(sort_by) = &sort_by
            && !fields.iter().any(|f| f.name == *sort_by)
        {
            return Err(self.error(
                directive.pos,
                format!("@edge(sortBy: {sort_by:?}) needs a metadata field {sort_by} on {name}"),
            ));
        }
        Ok(EdgeTypeDef {
            name,
            description: description(definition.node.description.as_ref()),
            from,
            to,
            fields,
            sort_by,
            edge_set,
            slot,
        })
    }
}

/// Whether the lock file's `key` is one of `type_name`'s slots.
fn pinned_for(key: &str, type_name: &str) -> bool {
    key.strip_prefix(type_name)
        .is_some_and(|rest| rest.starts_with(['.', '@', ':']))
}

/// The lock file's key of a type's index (`Post.list`).
pub(super) fn list_key(type_name: &str) -> String {
    format!("{type_name}.list")
}

/// The lock file's key of an `@index` (`Comment@byPost`).
pub(super) fn index_key(type_name: &str, index: &str) -> String {
    format!("{type_name}@{index}")
}

/// The lock file's key of the slot `member`'s nodes write for `owner.field` (`Post:Blog.posts`).
pub(super) fn relation_key(member: &str, owner: &str, field: &str) -> String {
    format!("{member}:{owner}.{field}")
}

impl Reader<'_> {
    /// The slots the lock file pins for `type_name`'s keys.
    fn pins_of(&self, type_name: &str) -> Vec<u8> {
        self.slot_pins
            .iter()
            .filter(|(key, _)| pinned_for(key, type_name))
            .map(|(_, slot)| *slot)
            .collect()
    }

    /// Gives each `@hasMany` written without `index:` a slot: the lowest that no member of its
    /// element uses (for a relation, its list or an index), in the order the schema declares
    /// them, after every slot written or chosen before; so adding such a relation moves no
    /// other slot.
    fn choose_relation_slots(
        &self,
        model: &mut Model,
        relations: &[PendingRelation],
        chosen: &mut BTreeMap<String, u8>,
    ) -> Result<(), ModelError> {
        for relation in relations {
            let Some(FieldKind::HasMany(has_many)) = model
                .type_def(&relation.owner)
                .and_then(|t| t.field(&relation.field))
                .map(|f| &f.kind)
            else {
                continue;
            };
            if has_many.slot != AUTO_SLOT {
                continue;
            }
            let has_many = has_many.clone();
            let members: Vec<String> = model
                .possible_types(&has_many.element)
                .iter()
                .map(|m| (*m).to_owned())
                .collect();
            let taken = |slot: u8| {
                members.iter().any(|member| {
                    model.type_def(member).is_some_and(|t| {
                        t.slots.iter().any(|s| s.slot == slot)
                            || t.list.is_some_and(|l| l.slot == slot)
                            || t.indexes.iter().any(|i| i.slot == slot)
                    })
                })
            };
            let keys: Vec<String> = members
                .iter()
                .map(|member| relation_key(member, &relation.owner, &relation.field))
                .collect();
            // The slot the lock file pins for the relation (on any member: a member added
            // since takes the same), else the lowest free on all of them that no other key pins.
            let here = format!("{}.{}", relation.owner, relation.field);
            let pins: Vec<u8> = keys
                .iter()
                .filter_map(|k| self.slot_pins.get(k).copied())
                .collect();
            let pinned = match pins.split_first() {
                None => None,
                Some((first, rest)) if rest.iter().all(|pin| pin == first) => Some(*first),
                Some(_) => {
                    return Err(self.error(
                        relation.pos,
                        format!(
                            "{here}: slots.lock pins it to different slots for the members of \
                             {}; pin one",
                            has_many.element
                        ),
                    ));
                }
            };
            if let Some(slot) = pinned.filter(|slot| taken(*slot)) {
                return Err(self.error(
                    relation.pos,
                    format!(
                        "{here}: slots.lock pins it to GSI{slot:02}, which another relation or \
                         index of {} now uses; give that one another index",
                        has_many.element
                    ),
                ));
            }
            let pinned_elsewhere = |slot: u8| {
                members
                    .iter()
                    .any(|member| self.pins_of(member).contains(&slot))
            };
            let free = pinned
                .or_else(|| (1..=MAX_SLOT).find(|slot| !taken(*slot) && !pinned_elsewhere(*slot)));
            let slot = free.ok_or_else(|| {
                self.error(
                    relation.pos,
                    format!(
                        "{}.{}: {} uses every index slot already; give this relation one of \
                         another's with @hasMany(index:)",
                        relation.owner, relation.field, has_many.element
                    ),
                )
            })?;
            for key in keys {
                chosen.insert(key, slot);
            }
            for member in &members {
                if let Some(type_def) = model.types.iter_mut().find(|t| t.name == *member) {
                    type_def.slots.push(SlotDef {
                        slot,
                        element: has_many.element.clone(),
                        foreign_key: has_many.foreign_key.clone(),
                        sort_by: has_many.sort_by.clone(),
                    });
                    type_def.slots.sort_by_key(|s| s.slot);
                }
            }
            let field = model
                .types
                .iter_mut()
                .find(|t| t.name == relation.owner)
                .and_then(|t| t.fields.iter_mut().find(|f| f.name == relation.field));
            if let Some(FieldDef {
                kind: FieldKind::HasMany(chosen),
                ..
            }) = field
            {
                chosen.slot = slot;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Relations and edges: the default schema's slots and ranks, and edge mistakes.

    use super::super::{error_of, farms};
    use crate::model::*;

    #[test]
    fn default_schema_derives_the_seed_layout() {
        let model = farms();
        // Slots 1 and 2 for relations; a cow uses both, so its type index takes slot 3, and
        // its index of breeds slot 4.
        assert_eq!(model.indexes, vec![1, 2, 3, 4]);
        let list_slot = |name: &str| model.type_def(name).and_then(|t| t.list).map(|l| l.slot);
        assert_eq!(list_slot("Farm"), Some(1));
        assert_eq!(list_slot("Cow"), Some(3));
        assert_eq!(list_slot("Goal"), Some(2));
        assert_eq!(
            model
                .type_def("Farm")
                .and_then(|t| t.list)
                .map(|l| l.shards),
            Some(DEFAULT_LIST_SHARDS)
        );
        let cow = model.type_def("Cow").expect("Cow is a model");
        let slots: Vec<(u8, &str)> = cow
            .slots
            .iter()
            .map(|s| (s.slot, s.element.as_str()))
            .collect();
        assert_eq!(slots, vec![(1, "Cow"), (2, "Animal")]);
        let farm = model.type_def("Farm").expect("Farm is a model");
        assert!(farm.slots.is_empty());
        assert_eq!(
            farm.unique_fields()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>(),
            vec!["name"]
        );
        assert_eq!(model.possible_types("Animal"), vec!["Chicken", "Cow"]);
    }

    #[test]
    fn edge_mistakes_name_their_line_and_column() {
        let base = "type Goal @model { title: String }\ntype User @model { name: String }\nunion Member = User\n";
        let table = [
            (
                "type M @edge(from: \"Nobody\", to: \"User\") { x: Int }",
                "schema.graphql:4:8: @edge(from: \"Nobody\"): Nobody is not a @model type",
            ),
            (
                "type M @edge(from: \"Goal\", to: \"User\", sortBy: \"rank\") { x: Int }",
                "schema.graphql:4:8: @edge(sortBy: \"rank\") needs a metadata field rank on M",
            ),
            (
                "type M @edge(from: \"Goal\", to: \"User\") { from: ID }",
                "schema.graphql:4:42: M.from: the name from is managed by @edge",
            ),
            (
                "type M @edge(from: \"Goal\", to: \"User\", edgeSet: false) { x: Int }\nextend type Nobody { y: Int }",
                "schema.graphql:5:1: extend Nobody: no type Nobody is declared to extend",
            ),
            (
                "enum Role { A @rank(value: 5) B }",
                "schema.graphql:4:31: B needs @rank: rank every value of an enum or none",
            ),
            (
                "enum Role { A @rank(value: 1000) }",
                "schema.graphql:4:15: @rank(value:) takes a whole number from 0 to 999",
            ),
        ];
        for (addition, expected) in table {
            let message = error_of(&format!("{base}{addition}"));
            assert!(
                message.starts_with(expected),
                "{addition}\n got: {message}\nwant: {expected}"
            );
        }
    }

    #[test]
    fn edge_fields_must_match_their_edge() {
        let schema = |field: &str| {
            format!(
                "type Goal @model {{ title: String\n  {field}\n}}\ntype User @model {{ name: String }}\ntype Tag @model {{ x: Int }}\ntype Sub @edge(from: \"Goal\", to: \"User\", edgeSet: false) {{ x: Int }}\ntype Lead @edge(from: \"Goal\", to: \"User\") {{ x: Int }}"
            )
        };
        let table = [
            (
                "tags: [Tag] @outgoing(edge: \"Lead\")",
                "Goal.tags: Lead goes from Goal to User, so @outgoing",
            ),
            (
                "owners: [User] @incoming(edge: \"Lead\")",
                "Goal.owners: Lead goes from Goal to User, so @incoming",
            ),
            (
                "subs: [User] @targets(edge: \"Sub\")",
                "Goal.subs: Sub is kept out of the edge set",
            ),
            (
                "leads: [User] @targets(edge: \"Lead\", role: LEAD)",
                "Goal.leads: role: needs Lead to sort by an enum field",
            ),
            (
                "x: [User] @outgoing(edge: \"Nope\")",
                "Goal.x: there is no @edge type Nope",
            ),
            (
                "y: User @targets(edge: \"Lead\")",
                "Goal.y: @targets needs a list type, like [User]",
            ),
        ];
        for (field, expected) in table {
            let message = error_of(&schema(field));
            assert!(
                message.contains(expected),
                "{field}\n got: {message}\nwant: {expected}"
            );
        }
        let valid = schema("leads: [User] @targets(edge: \"Lead\")");
        let model = Model::parse("schema.graphql", &valid).expect("a valid edge schema");
        assert_eq!(model.edges.len(), 2);
        assert_eq!(
            model.indexes,
            vec![1],
            "edges use GSI01 for their inverse lookups"
        );
    }

    #[test]
    fn the_default_schema_ranks_goal_roles() {
        let model = farms();
        assert_eq!(model.rank_of("GoalRole", "LEAD"), Some(500));
        assert_eq!(model.rank_of("TeamRole", "MANAGER"), None);
        let membership = model.edge_def("GoalMembership").expect("an edge type");
        assert!(membership.edge_set);
        assert!(
            !model
                .edge_def("GoalSubscription")
                .expect("an edge type")
                .edge_set
        );
    }

    /// `schema` read with the slots `pins` pins.
    fn pinned(
        schema: &str,
        pins: &std::collections::BTreeMap<String, u8>,
    ) -> Result<Model, ModelError> {
        Model::parse_with_resolver_files(
            "schema.graphql",
            schema,
            &Default::default(),
            &Default::default(),
            pins,
            &Default::default(),
        )
    }

    #[test]
    fn pinned_slots_stay_when_the_schema_changes() {
        let parse = |schema: &str, pins: &std::collections::BTreeMap<String, u8>| {
            pinned(schema, pins).expect("the schema loads")
        };
        let slot_of = |model: &Model, index: &str| {
            model
                .type_def("Cow")
                .and_then(|t| t.indexes.iter().find(|i| i.name == index))
                .map(|i| i.slot)
        };
        let first = parse(
            "type Cow @model { breed: String @index }\ntype Farm @model { cows: [Cow] @hasMany }",
            &Default::default(),
        );
        assert_eq!(slot_of(&first, "byBreed"), Some(2));
        assert_eq!(first.slot_pins["Cow:Farm.cows"], 3);
        // An index and a relation declared before the others: unpinned, every slot moves.
        let edited = "type Cow @model { colour: String @index breed: String @index }\n\
                      type Farm @model { calves: [Cow] @hasMany cows: [Cow] @hasMany }";
        let unpinned = parse(edited, &Default::default());
        assert_eq!(slot_of(&unpinned, "byBreed"), Some(3));
        // Pinned, each keeps its slot and the new ones take free ones.
        let kept = parse(edited, &first.slot_pins);
        assert_eq!(slot_of(&kept, "byBreed"), Some(2));
        assert_eq!(kept.slot_pins["Cow:Farm.cows"], 3);
        assert_eq!(slot_of(&kept, "byColour"), Some(4));
        assert_eq!(kept.slot_pins["Cow:Farm.calves"], 5);
        let farm = kept.type_def("Farm").expect("declared");
        assert!(
            matches!(farm.field("cows").map(|f| &f.kind), Some(FieldKind::HasMany(h)) if h.slot == 3)
        );
        // A dropped index's slot is not given to another while the lock pins it.
        let dropped = parse(
            "type Cow @model { colour: String @index size: Int @index }\n\
             type Farm @model { cows: [Cow] @hasMany }",
            &kept.slot_pins,
        );
        assert_eq!(slot_of(&dropped, "byColour"), Some(4));
        // Not byBreed's 2 nor calves' 5: the lock still pins them.
        assert_eq!(slot_of(&dropped, "bySize"), Some(6));
        // A pinned slot a relation now writes is refused, naming both.
        let mut clash = first.slot_pins.clone();
        clash.insert("Cow@byBreed".to_owned(), 5);
        let error = pinned(
            "type Cow @model { breed: String @index farmId: ID }\ntype Farm @model { cows: [Cow] @hasMany(index: \"GSI05\", field: \"farmId\") }",
            &clash,
        )
        .expect_err("a clash");
        assert!(
            error
                .to_string()
                .contains("a relation writes slot GSI05, which slots.lock pins for Cow@byBreed"),
            "{error}"
        );
    }

    #[test]
    fn a_relations_pin_holds_for_a_new_member_and_is_never_moved_silently() {
        let pins: std::collections::BTreeMap<String, u8> = [
            ("Cow:Farm.animals".to_owned(), 4),
            ("Cow.list".to_owned(), 1),
        ]
        .into();
        // A member added to the union takes the relation's pinned slot.
        let model = pinned(
            "union Animal = Cow | Hen\ntype Cow @model { n: Int }\ntype Hen @model { n: Int }\n\
             type Farm @model { animals: [Animal] @hasMany }",
            &pins,
        )
        .expect("the schema loads");
        let slots = |name: &str| -> Vec<u8> {
            model
                .type_def(name)
                .expect("declared")
                .slots
                .iter()
                .map(|s| s.slot)
                .collect()
        };
        assert_eq!((slots("Cow"), slots("Hen")), (vec![4], vec![4]));
        // A relation written onto the pinned slot is refused, not moved around.
        let error = pinned(
            "type Cow @model { n: Int farmId: ID }\n\
             type Farm @model { animals: [Cow] @hasMany herd: [Cow] @hasMany(index: \"GSI04\", field: \"farmId\") }",
            &pins,
        )
        .expect_err("a clash");
        assert!(
            error
                .to_string()
                .contains("slots.lock pins for Cow:Farm.animals"),
            "{error}"
        );
        // A pin that is no slot is refused.
        let error = pinned(
            "type Cow @model { n: Int }",
            &[("Cow.list".to_owned(), 0)].into(),
        )
        .expect_err("slot 0");
        assert!(
            error.to_string().contains("which is no index slot"),
            "{error}"
        );
    }
}
