//! Relations between types, checked once every type is read: each `@belongsTo`, `@hasMany`,
//! `@outgoing`, `@incoming` and `@targets` against the types and `@edge` types it names, then
//! the slots (chosen in `slots`) and the names of the root fields every type adds.

use super::amplify::AUTO_SLOT;
use super::{PendingRelation, Reader};
use crate::model::{
    EdgeTypeDef, EnumDef, FieldDef, FieldKind, HasMany, Model, ModelError, ScalarType, SlotDef,
    TypeDef,
};
use async_graphql_parser::Pos;
use std::collections::{BTreeMap, BTreeSet};

/// The slots relations write by `@hasMany(index:)`, gathered while checking them.
#[derive(Default)]
struct WrittenSlots {
    /// (member type, slot) → the relation that makes it write that slot.
    users: BTreeMap<(String, u8), String>,
    /// Each member type with a slot it writes, in the order the relations are declared.
    slots: Vec<(String, SlotDef)>,
}

/// The relation a check is about: where it is declared, and how refusals name it.
struct At<'r> {
    pos: Pos,
    owner: &'r str,
    /// `Owner.field`.
    here: String,
}

impl Reader<'_> {
    /// Checks every relation against what it names, gives each type's list, indexes and
    /// relations their slots, and checks the root fields' names; in this order, which decides
    /// the first mistake a schema is refused with.
    pub(super) fn check_relations(
        &self,
        model: &mut Model,
        relations: &[PendingRelation],
    ) -> Result<(), ModelError> {
        let mut written = WrittenSlots::default();
        for relation in relations {
            self.check_relation(model, relation, &mut written)?;
        }
        for (member, slot) in written.slots {
            model
                .types
                .iter_mut()
                .find(|t| t.name == member)
                .expect("slot members are model types")
                .slots
                .push(slot);
        }
        self.slot_pins_are_index_slots()?;
        let mut chosen = self.choose_type_slots(model)?;
        self.choose_relation_slots(model, relations, &mut chosen)?;
        model.slot_pins = chosen;
        self.mutation_names_are_unique(model)?;
        let roots = self.get_and_list_names_are_unique(model)?;
        self.index_query_fields_are_unique(model, roots)?;
        model.indexes = used_indexes(model, &written.users);
        Ok(())
    }

    /// Checks one relation field by its kind, gathering the slots a `@hasMany` writes.
    fn check_relation(
        &self,
        model: &Model,
        relation: &PendingRelation,
        written: &mut WrittenSlots,
    ) -> Result<(), ModelError> {
        let owner = model
            .type_def(&relation.owner)
            .expect("pending relations name read types");
        let field = owner
            .field(&relation.field)
            .expect("pending relations name read fields");
        let at = At {
            pos: relation.pos,
            owner: &relation.owner,
            here: format!("{}.{}", relation.owner, relation.field),
        };
        self.check_relation_parent(model, relation, field)?;
        match &field.kind {
            FieldKind::BelongsTo {
                target,
                foreign_key,
                required,
            } => {
                let key_required = self.belongs_to_names_a_key_field_of_its_own(
                    model,
                    &at,
                    owner,
                    target,
                    foreign_key,
                )?;
                self.a_required_belongs_to_has_a_required_key(
                    &at,
                    foreign_key,
                    *required,
                    key_required,
                )
            }
            FieldKind::HasMany(has_many) => self.check_has_many(model, &at, has_many, written),
            FieldKind::Outgoing { edge, element } => {
                let edge_def = self.edge_named(model, edge, at.pos, &at.here)?;
                self.outgoing_sits_on_its_edges_from_type(&at, edge, edge_def, element)
            }
            FieldKind::Incoming { edge, element } => {
                let edge_def = self.edge_named(model, edge, at.pos, &at.here)?;
                self.incoming_sits_on_a_type_its_edge_points_to(model, &at, edge, edge_def, element)
            }
            FieldKind::Targets {
                edge,
                element,
                role,
            } => {
                let edge_def = self.edge_named(model, edge, at.pos, &at.here)?;
                self.targets_starts_from_its_edges_from_type(&at, edge, edge_def)?;
                self.targets_reads_an_edge_in_the_edge_set(&at, edge, edge_def)?;
                self.targets_points_only_where_its_edge_points(
                    model, &at, edge, edge_def, element,
                )?;
                if let Some(role) = role {
                    let values =
                        self.role_needs_an_edge_sorted_by_an_enum(model, &at, edge, edge_def)?;
                    self.role_is_a_value_of_the_sort_enum(&at, role, values)?;
                }
                Ok(())
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

    /// `@belongsTo(field:)` names the owner's field that holds the target's key: an `ID` (or a
    /// `String`, when the target is keyed by a text field of its own, or in Amplify's
    /// language, which takes either). Returns whether that
    /// field is non-null.
    fn belongs_to_names_a_key_field_of_its_own(
        &self,
        model: &Model,
        at: &At<'_>,
        owner: &TypeDef,
        target: &str,
        foreign_key: &str,
    ) -> Result<bool, ModelError> {
        let keyed_by_text = keyed_by_text(model, target) || self.amplify_language();
        match owner.field(foreign_key).map(|f| &f.kind) {
            Some(FieldKind::Scalar {
                scalar, required, ..
            }) if *scalar == ScalarType::Id
                || (keyed_by_text && *scalar == ScalarType::String) =>
            {
                Ok(*required)
            }
            _ => Err(self.error(
                at.pos,
                format!(
                    "{}: @belongsTo(field: {foreign_key:?}) needs a field `{foreign_key}: ID` on {}",
                    at.here, at.owner
                ),
            )),
        }
    }

    /// A non-null `@belongsTo` needs a non-null key: a node without one could not answer it.
    /// Amplify's language allows it, as Amplify's transformer does (`lot: Lot! @belongsTo`
    /// over the optional key its `@hasMany` keeps): such a node answers with an error.
    fn a_required_belongs_to_has_a_required_key(
        &self,
        at: &At<'_>,
        foreign_key: &str,
        required: bool,
        key_required: bool,
    ) -> Result<(), ModelError> {
        if required && !key_required && !self.amplify_language() {
            return Err(self.error(
                at.pos,
                format!(
                    "{} is non-null, so {}.{foreign_key} must be ID!",
                    at.here, at.owner
                ),
            ));
        }
        Ok(())
    }

    /// Checks a `@hasMany` against each member of its element, gathering the slot each member
    /// writes for it when `index:` names one.
    fn check_has_many<'m>(
        &self,
        model: &'m Model,
        at: &At<'_>,
        has_many: &HasMany,
        written: &mut WrittenSlots,
    ) -> Result<(), ModelError> {
        let mut sort_scalar: Option<&'m ScalarType> = None;
        for member in model.possible_types(&has_many.element) {
            let member_def = model.type_def(member).expect("unions hold model types");
            self.has_many_names_a_key_field_of_each_member(
                model, at, has_many, member, member_def,
            )?;
            if let Some(sort_by) = &has_many.sort_by {
                let scalar = self
                    .sort_by_names_a_scalar_field_of_each_member(at, sort_by, member, member_def)?;
                self.members_sort_by_fields_of_one_type(
                    at,
                    has_many,
                    sort_by,
                    sort_scalar,
                    scalar,
                )?;
                sort_scalar = Some(scalar);
            }
            if has_many.slot == AUTO_SLOT {
                // Chosen later, once the explicit slots, lists and indexes hold theirs.
                continue;
            }
            self.a_member_writes_a_slot_for_one_relation(at, member, has_many.slot, written)?;
            written
                .users
                .insert((member.to_owned(), has_many.slot), at.here.clone());
            written.slots.push((
                member.to_owned(),
                SlotDef {
                    slot: has_many.slot,
                    element: has_many.element.clone(),
                    foreign_key: has_many.foreign_key.clone(),
                    sort_by: has_many.sort_by.clone(),
                },
            ));
        }
        Ok(())
    }

    /// `@hasMany(field:)` names each member's field that holds the owner's key: an `ID` (or a
    /// `String`, when the owner is keyed by a text field of its own, or in Amplify's
    /// language).
    fn has_many_names_a_key_field_of_each_member(
        &self,
        model: &Model,
        at: &At<'_>,
        has_many: &HasMany,
        member: &str,
        member_def: &TypeDef,
    ) -> Result<(), ModelError> {
        let keyed_by_text = keyed_by_text(model, at.owner) || self.amplify_language();
        match member_def
            .field(&has_many.foreign_key)
            .and_then(FieldDef::scalar)
        {
            Some(ScalarType::Id) => Ok(()),
            Some(ScalarType::String) if keyed_by_text => Ok(()),
            _ => Err(self.error(
                at.pos,
                format!(
                    "{}: @hasMany(field: {:?}) needs a field `{}: ID` on {member}",
                    at.here, has_many.foreign_key, has_many.foreign_key
                ),
            )),
        }
    }

    /// `sortBy:` names a scalar field of each member: the slot's sort key is written from it.
    fn sort_by_names_a_scalar_field_of_each_member<'m>(
        &self,
        at: &At<'_>,
        sort_by: &str,
        member: &str,
        member_def: &'m TypeDef,
    ) -> Result<&'m ScalarType, ModelError> {
        member_def
            .field(sort_by)
            .and_then(FieldDef::scalar)
            .ok_or_else(|| {
                self.error(
                    at.pos,
                    format!(
                        "{}: sortBy {sort_by:?} needs a scalar field {sort_by} on {member}",
                        at.here
                    ),
                )
            })
    }

    /// The members of a union sort by fields of one type: their sort keys share one order.
    fn members_sort_by_fields_of_one_type(
        &self,
        at: &At<'_>,
        has_many: &HasMany,
        sort_by: &str,
        first: Option<&ScalarType>,
        scalar: &ScalarType,
    ) -> Result<(), ModelError> {
        if first.is_some_and(|first| first != scalar) {
            return Err(self.error(
                at.pos,
                format!(
                    "{}: the members of {} sort by {sort_by} fields of different types",
                    at.here, has_many.element
                ),
            ));
        }
        Ok(())
    }

    /// A type's nodes write each slot for one relation: a slot holds one key per item.
    fn a_member_writes_a_slot_for_one_relation(
        &self,
        at: &At<'_>,
        member: &str,
        slot: u8,
        written: &WrittenSlots,
    ) -> Result<(), ModelError> {
        if let Some(previous) = written.users.get(&(member.to_owned(), slot)) {
            return Err(self.error(
                at.pos,
                format!(
                    "{}: {member} already writes slot GSI{slot:02} for {previous}; choose another index",
                    at.here
                ),
            ));
        }
        Ok(())
    }

    /// `@outgoing(edge:)` sits on the edge's `from` type, as a list of its `to`: it reads the
    /// edges a node starts.
    fn outgoing_sits_on_its_edges_from_type(
        &self,
        at: &At<'_>,
        edge: &str,
        edge_def: &EdgeTypeDef,
        element: &str,
    ) -> Result<(), ModelError> {
        if edge_def.from != at.owner || edge_def.to != element {
            return Err(self.error(
                at.pos,
                format!(
                    "{}: {edge} goes from {} to {}, so @outgoing(edge: {edge:?}) belongs on {} as [{}]",
                    at.here, edge_def.from, edge_def.to, edge_def.from, edge_def.to
                ),
            ));
        }
        Ok(())
    }

    /// `@incoming(edge:)` sits on a type the edge points to, as a list of its `from`: it reads
    /// the edges that reach a node.
    fn incoming_sits_on_a_type_its_edge_points_to(
        &self,
        model: &Model,
        at: &At<'_>,
        edge: &str,
        edge_def: &EdgeTypeDef,
        element: &str,
    ) -> Result<(), ModelError> {
        let reaches_owner = model.possible_types(&edge_def.to).contains(&at.owner);
        if !reaches_owner || edge_def.from != element {
            return Err(self.error(
                at.pos,
                format!(
                    "{}: {edge} goes from {} to {}, so @incoming(edge: {edge:?}) belongs on {} as [{}]",
                    at.here, edge_def.from, edge_def.to, edge_def.to, edge_def.from
                ),
            ));
        }
        Ok(())
    }

    /// `@targets(edge:)` sits on the edge's `from` type: it reads the edges a node starts.
    fn targets_starts_from_its_edges_from_type(
        &self,
        at: &At<'_>,
        edge: &str,
        edge_def: &EdgeTypeDef,
    ) -> Result<(), ModelError> {
        if edge_def.from != at.owner {
            return Err(self.error(
                at.pos,
                format!(
                    "{}: {edge} starts from {}, not {}",
                    at.here, edge_def.from, at.owner
                ),
            ));
        }
        Ok(())
    }

    /// `@targets` reads the edge set stored with the node, which `edgeSet: false` leaves out.
    fn targets_reads_an_edge_in_the_edge_set(
        &self,
        at: &At<'_>,
        edge: &str,
        edge_def: &EdgeTypeDef,
    ) -> Result<(), ModelError> {
        if !edge_def.edge_set {
            return Err(self.error(
                at.pos,
                format!(
                    "{}: {edge} is kept out of the edge set (edgeSet: false), so @targets cannot read it",
                    at.here
                ),
            ));
        }
        Ok(())
    }

    /// Each type a `@targets` field's element holds is one its edge can point to.
    fn targets_points_only_where_its_edge_points(
        &self,
        model: &Model,
        at: &At<'_>,
        edge: &str,
        edge_def: &EdgeTypeDef,
        element: &str,
    ) -> Result<(), ModelError> {
        let reachable = model.possible_types(&edge_def.to);
        if let Some(stranger) = model
            .possible_types(element)
            .into_iter()
            .find(|t| !reachable.contains(t))
        {
            return Err(self.error(
                at.pos,
                format!("{}: {edge} never points to {stranger}", at.here),
            ));
        }
        Ok(())
    }

    /// `@targets(role:)` picks edges by their sort value, so the edge sorts by an enum field.
    /// Returns that enum.
    fn role_needs_an_edge_sorted_by_an_enum<'m>(
        &self,
        model: &'m Model,
        at: &At<'_>,
        edge: &str,
        edge_def: &EdgeTypeDef,
    ) -> Result<&'m EnumDef, ModelError> {
        let values = match edge_def.sort_scalar() {
            Some(ScalarType::Enum(enum_name)) => model.enum_def(enum_name),
            _ => None,
        };
        values.ok_or_else(|| {
            self.error(
                at.pos,
                format!("{}: role: needs {edge} to sort by an enum field", at.here),
            )
        })
    }

    /// `@targets(role:)` names a value of the enum its edge sorts by.
    fn role_is_a_value_of_the_sort_enum(
        &self,
        at: &At<'_>,
        role: &str,
        values: &EnumDef,
    ) -> Result<(), ModelError> {
        if !values.values.iter().any(|v| v.name == role) {
            return Err(self.error(
                at.pos,
                format!("{}: {role} is not a value of {}", at.here, values.name),
            ));
        }
        Ok(())
    }

    /// The mutations every type and edge adds have names of their own: a renamed one
    /// (`@model(mutations:)`) may not take a generated one's.
    fn mutation_names_are_unique(&self, model: &Model) -> Result<(), ModelError> {
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
        Ok(())
    }

    /// Each type's get and list query fields have names of their own among Query's. Returns
    /// Query's fields so far, the unique fields' lookups with them.
    fn get_and_list_names_are_unique(&self, model: &Model) -> Result<Vec<String>, ModelError> {
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
        Ok(roots)
    }

    /// Each `@index(queryField:)` is a name of its own among Query's fields.
    fn index_query_fields_are_unique(
        &self,
        model: &Model,
        mut roots: Vec<String>,
    ) -> Result<(), ModelError> {
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
}

/// Whether `type_name` is keyed by a text field of its own (`@primaryKey`), so that relations
/// name it by text.
fn keyed_by_text(model: &Model, type_name: &str) -> bool {
    model
        .type_def(type_name)
        .is_some_and(|t| matches!(t.primary_key, Some((_, ScalarType::String))))
}

/// Every index slot the table's items write: the table has a global secondary index for each.
fn used_indexes(model: &Model, written: &BTreeMap<(String, u8), String>) -> Vec<u8> {
    let indexes: BTreeSet<u8> = written
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
    indexes.into_iter().collect()
}
#[cfg(test)]
mod tests {
    //! Relations: the default schema's slots and ranks, and each mistake a relation is refused for.

    use super::super::{assert_refused, error_of, farms};
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

    #[test]
    fn a_belongs_to_without_its_key_field_is_refused() {
        assert_refused(
            "type Farm @model { logo: Image @belongsTo(field: \"logoId\") }\ntype Image @model { url: String }",
            "Farm.logo: @belongsTo(field: \"logoId\") needs a field `logoId: ID` on Farm",
        );
    }

    #[test]
    fn a_non_null_belongs_to_with_a_nullable_key_is_refused() {
        assert_refused(
            "type Farm @model { logo: Image! @belongsTo(field: \"logoId\") logoId: ID }\ntype Image @model { url: String }",
            "Farm.logo is non-null, so Farm.logoId must be ID!",
        );
    }

    #[test]
    fn a_has_many_whose_member_lacks_the_key_field_is_refused() {
        assert_refused(
            "type Farm @model { cows: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\") }\ntype Cow @model { name: String }",
            "Farm.cows: @hasMany(field: \"farmId\") needs a field `farmId: ID` on Cow",
        );
    }

    #[test]
    fn a_has_many_sorted_by_a_field_a_member_lacks_is_refused() {
        assert_refused(
            "type Farm @model { cows: [Cow] @hasMany(field: \"farmId\", sortBy: \"age\") }\ntype Cow @model { farmId: ID }",
            "Farm.cows: sortBy \"age\" needs a scalar field age on Cow",
        );
    }

    #[test]
    fn members_sorted_by_fields_of_different_types_are_refused() {
        assert_refused(
            "union Animal = Cow | Hen\ntype Cow @model { farmId: ID age: Int }\ntype Hen @model { farmId: ID age: String }\ntype Farm @model { animals: [Animal] @hasMany(field: \"farmId\", sortBy: \"age\") }",
            "Farm.animals: the members of Animal sort by age fields of different types",
        );
    }

    #[test]
    fn two_relations_writing_one_slot_of_a_type_are_refused() {
        assert_refused(
            "type Farm @model { a: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\") b: [Cow] @hasMany(index: \"GSI01\", field: \"farmId\") }\ntype Cow @model { farmId: ID }",
            "Farm.b: Cow already writes slot GSI01 for Farm.a; choose another index",
        );
    }

    /// A schema with a `Lead` edge from `Goal` to `User` sorted by a role, and `field` on `on`.
    fn with_lead_edge(on: &str, field: &str) -> String {
        let goal = if on == "Goal" { field } else { "" };
        let user = if on == "User" { field } else { "" };
        format!(
            "enum Role {{ LEAD MEMBER }}\ntype Goal @model {{ title: String {goal} }}\ntype User @model {{ name: String {user} }}\ntype Tag @model {{ x: Int }}\ntype Lead @edge(from: \"Goal\", to: \"User\", sortBy: \"role\") {{ role: Role }}"
        )
    }

    #[test]
    fn targets_on_a_type_its_edge_does_not_start_from_is_refused() {
        assert_refused(
            &with_lead_edge("User", "leads: [User] @targets(edge: \"Lead\")"),
            "User.leads: Lead starts from Goal, not User",
        );
    }

    #[test]
    fn targets_of_a_type_its_edge_never_reaches_is_refused() {
        assert_refused(
            &with_lead_edge("Goal", "tags: [Tag] @targets(edge: \"Lead\")"),
            "Goal.tags: Lead never points to Tag",
        );
    }

    #[test]
    fn a_role_that_is_no_value_of_the_sort_enum_is_refused() {
        assert_refused(
            &with_lead_edge("Goal", "leads: [User] @targets(edge: \"Lead\", role: BOSS)"),
            "Goal.leads: BOSS is not a value of Role",
        );
    }

    #[test]
    fn a_mutation_renamed_onto_a_generated_one_is_refused() {
        assert_refused(
            "type A @model(mutations: { create: \"createAs\" }) { n: Int }",
            "type A: createAs is already a field of Mutation",
        );
    }

    #[test]
    fn two_types_with_one_get_query_are_refused() {
        assert_refused(
            "type A @model(queries: { get: \"getB\" }) { n: Int }\ntype B @model(queries: { get: \"getB\" }) { n: Int }",
            "type B: getB is already a field of Query",
        );
    }

    #[test]
    fn an_index_query_field_named_like_a_list_query_is_refused() {
        assert_refused(
            "type A @model { a: String @index(queryField: \"listAS\") }",
            "A: @index queryField listAS is already a field of Query",
        );
    }
}
