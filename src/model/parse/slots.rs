//! The index slots of each type, chosen once every relation is checked: its list's and its
//! `@index`es' (then the `@hasMany` relations' that `index:` leaves open), keeping the slots
//! `slots.lock` pins, so that a schema edit moves no stored item's index.

use super::amplify::AUTO_SLOT;
use super::{MAX_SLOT, PendingRelation, Reader};
use crate::model::{FieldDef, FieldKind, HasMany, Model, ModelError, SlotDef, TypeDef};
use async_graphql_parser::Pos;
use std::collections::BTreeMap;

/// What a type's slot is chosen among: the slots its relations write, and those taken so far.
struct TypeSlots<'t> {
    type_def: &'t TypeDef,
    /// The slots relations write by `index:`.
    written: Vec<u8>,
    /// The slots the lock file pins for the type's keys, the dropped ones' too.
    pins: Vec<u8>,
    /// Written, or chosen for an earlier key.
    taken: Vec<u8>,
}

impl Reader<'_> {
    /// Every slot `slots.lock` pins is one of the table's index slots.
    pub(super) fn slot_pins_are_index_slots(&self) -> Result<(), ModelError> {
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
        Ok(())
    }

    /// Gives each type's list, then each `@index` in turn, the slot pinned for it, or the
    /// lowest slot the type's nodes use for nothing else (an index that exists already
    /// whenever one is free). Returns the key of each with its slot.
    pub(super) fn choose_type_slots(
        &self,
        model: &mut Model,
    ) -> Result<BTreeMap<String, u8>, ModelError> {
        let mut chosen: BTreeMap<String, u8> = BTreeMap::new();
        for type_def in &mut model.types {
            type_def.slots.sort_by_key(|s| s.slot);
            let written: Vec<u8> = type_def.slots.iter().map(|s| s.slot).collect();
            self.a_written_slot_is_pinned_for_nothing_else(type_def, &written)?;
            let mut slots = TypeSlots {
                type_def,
                pins: self.pins_of(&type_def.name),
                taken: written.clone(),
                written,
            };
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
            let mut picked = Vec::new();
            for (key, what) in &wanted {
                let slot = self.slot_for(&slots, key, what)?;
                slots.taken.push(slot);
                chosen.insert(key.clone(), slot);
                picked.push(slot);
            }
            let mut picked = picked.into_iter();
            if let Some(list) = &mut type_def.list {
                list.slot = picked.next().expect("a slot was chosen for the list");
            }
            for index in &mut type_def.indexes {
                index.slot = picked.next().expect("a slot was chosen for each index");
            }
        }
        Ok(chosen)
    }

    /// A slot a relation writes by `index:` is no slot the lock pins for something else of the
    /// type: its items may still be there.
    fn a_written_slot_is_pinned_for_nothing_else(
        &self,
        type_def: &TypeDef,
        written: &[u8],
    ) -> Result<(), ModelError> {
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
        Ok(())
    }

    /// The slot for a type's list or index (`what`, under the lock file's `key`): the pinned
    /// one, else the lowest free one that no other key pins.
    fn slot_for(&self, slots: &TypeSlots<'_>, key: &str, what: &str) -> Result<u8, ModelError> {
        let slot = match self.slot_pins.get(key) {
            Some(pinned) => {
                self.a_pinned_slot_is_written_by_no_relation(slots, *pinned, what)?;
                *pinned
            }
            None => (1..=u8::MAX)
                .find(|n| !slots.taken.contains(n) && !slots.pins.contains(n))
                .expect("a type uses fewer than 255 slots"),
        };
        self.a_slot_is_left_for_each_list_and_index(slots.type_def, slot, what)?;
        Ok(slot)
    }

    /// The slot the lock pins for a list or index is written by no relation: the two would
    /// share one index.
    fn a_pinned_slot_is_written_by_no_relation(
        &self,
        slots: &TypeSlots<'_>,
        pinned: u8,
        what: &str,
    ) -> Result<(), ModelError> {
        if slots.written.contains(&pinned) {
            return Err(self.error(
                Pos::default(),
                format!(
                    "type {}: slots.lock pins slot GSI{pinned:02} for {what}, \
                     and a relation writes it too; give the relation another index",
                    slots.type_def.name
                ),
            ));
        }
        Ok(())
    }

    /// A type's list and indexes fit in the table's index slots beside its relations.
    fn a_slot_is_left_for_each_list_and_index(
        &self,
        type_def: &TypeDef,
        slot: u8,
        what: &str,
    ) -> Result<(), ModelError> {
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
        Ok(())
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

/// A `@hasMany` whose slot is being chosen: its members, and how refusals name it.
struct OpenRelation<'r> {
    relation: &'r PendingRelation,
    has_many: HasMany,
    members: Vec<String>,
}

impl OpenRelation<'_> {
    /// Whether a member uses `slot` already (for a relation, its list or an index).
    fn taken(&self, model: &Model, slot: u8) -> bool {
        self.members.iter().any(|member| {
            model.type_def(member).is_some_and(|t| {
                t.slots.iter().any(|s| s.slot == slot)
                    || t.list.is_some_and(|l| l.slot == slot)
                    || t.indexes.iter().any(|i| i.slot == slot)
            })
        })
    }
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
    pub(super) fn choose_relation_slots(
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
            let open = OpenRelation {
                relation,
                has_many: has_many.clone(),
                members: model
                    .possible_types(&has_many.element)
                    .iter()
                    .map(|m| (*m).to_owned())
                    .collect(),
            };
            let keys: Vec<String> = open
                .members
                .iter()
                .map(|member| relation_key(member, &relation.owner, &relation.field))
                .collect();
            // The slot the lock file pins for the relation (on any member: a member added
            // since takes the same), else the lowest free on all of them that no other key pins.
            let pinned = self.a_relation_is_pinned_to_one_slot(&open, &keys)?;
            self.a_relations_pinned_slot_is_still_free(model, &open, pinned)?;
            let slot = self.a_slot_is_left_for_the_relation(model, &open, pinned)?;
            for key in keys {
                chosen.insert(key, slot);
            }
            give_relation_its_slot(model, &open, slot);
        }
        Ok(())
    }

    /// The lock file pins a relation to one slot on all its members: its items are in one
    /// index. Returns that slot, if the lock file pins one.
    fn a_relation_is_pinned_to_one_slot(
        &self,
        open: &OpenRelation<'_>,
        keys: &[String],
    ) -> Result<Option<u8>, ModelError> {
        let pins: Vec<u8> = keys
            .iter()
            .filter_map(|k| self.slot_pins.get(k).copied())
            .collect();
        match pins.split_first() {
            None => Ok(None),
            Some((first, rest)) if rest.iter().all(|pin| pin == first) => Ok(Some(*first)),
            Some(_) => Err(self.error(
                open.relation.pos,
                format!(
                    "{}.{}: slots.lock pins it to different slots for the members of \
                     {}; pin one",
                    open.relation.owner, open.relation.field, open.has_many.element
                ),
            )),
        }
    }

    /// A relation's pinned slot is still free on its members: it is never moved silently.
    fn a_relations_pinned_slot_is_still_free(
        &self,
        model: &Model,
        open: &OpenRelation<'_>,
        pinned: Option<u8>,
    ) -> Result<(), ModelError> {
        if let Some(slot) = pinned.filter(|slot| open.taken(model, *slot)) {
            return Err(self.error(
                open.relation.pos,
                format!(
                    "{}.{}: slots.lock pins it to GSI{slot:02}, which another relation or \
                     index of {} now uses; give that one another index",
                    open.relation.owner, open.relation.field, open.has_many.element
                ),
            ));
        }
        Ok(())
    }

    /// A slot is free for the relation on all its members (the pinned one, else the lowest
    /// that no other key pins). Returns it.
    fn a_slot_is_left_for_the_relation(
        &self,
        model: &Model,
        open: &OpenRelation<'_>,
        pinned: Option<u8>,
    ) -> Result<u8, ModelError> {
        let pinned_elsewhere = |slot: u8| {
            open.members
                .iter()
                .any(|member| self.pins_of(member).contains(&slot))
        };
        let free = pinned.or_else(|| {
            (1..=MAX_SLOT).find(|slot| !open.taken(model, *slot) && !pinned_elsewhere(*slot))
        });
        free.ok_or_else(|| {
            self.error(
                open.relation.pos,
                format!(
                    "{}.{}: {} uses every index slot already; give this relation one of \
                     another's with @hasMany(index:)",
                    open.relation.owner, open.relation.field, open.has_many.element
                ),
            )
        })
    }
}

/// Writes the relation's slot on each member and on the relation field itself.
fn give_relation_its_slot(model: &mut Model, open: &OpenRelation<'_>, slot: u8) {
    let has_many = &open.has_many;
    for member in &open.members {
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
    let relation = open.relation;
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

#[cfg(test)]
mod tests {
    //! Slots: pinned ones kept across schema edits, and the pins refused.

    use super::super::assert_refused;
    use crate::model::*;

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

    #[test]
    fn a_relation_pinned_to_different_slots_for_its_members_is_refused() {
        let pins = [
            ("Cow:Farm.animals".to_owned(), 4),
            ("Hen:Farm.animals".to_owned(), 5),
        ]
        .into();
        let error = pinned(
            "union Animal = Cow | Hen\ntype Cow @model { n: Int }\ntype Hen @model { n: Int }\n\
             type Farm @model { animals: [Animal] @hasMany }",
            &pins,
        )
        .expect_err("two pins");
        assert!(
            error
                .to_string()
                .contains("Farm.animals: slots.lock pins it to different slots for the members of Animal; pin one"),
            "{error}"
        );
    }

    #[test]
    fn a_relation_pinned_to_a_slot_another_took_is_refused() {
        let pins = [
            ("Cow:Farm.calves".to_owned(), 4),
            ("Cow:Farm.cows".to_owned(), 4),
        ]
        .into();
        let error = pinned(
            "type Cow @model { n: Int }\ntype Farm @model { calves: [Cow] @hasMany cows: [Cow] @hasMany }",
            &pins,
        )
        .expect_err("one slot pinned twice");
        assert!(
            error.to_string().contains(
                "Farm.cows: slots.lock pins it to GSI04, which another relation or index of Cow now uses"
            ),
            "{error}"
        );
    }

    /// A `Cow` whose relations from `Farm` write every slot, with `extra` among its fields.
    fn full_cow(extra: &str) -> String {
        let relations: String = (1..=20)
            .map(|n| format!("r{n}: [Cow] @hasMany(index: \"GSI{n:02}\", field: \"farmId\") "))
            .collect();
        format!(
            "type Cow @model {{ farmId: ID {extra} }}\ntype Farm @model(list: false) {{ {relations} }}"
        )
    }

    #[test]
    fn a_type_whose_relations_use_every_slot_has_none_for_its_list() {
        assert_refused(
            &full_cow(""),
            "type Cow: its relations and indexes use every index slot, none is left for listCows; give it @model(list: false)",
        );
    }

    #[test]
    fn a_relation_without_index_on_a_full_type_is_refused() {
        let relations: String = (1..=19)
            .map(|n| format!("r{n}: [Cow] @hasMany(index: \"GSI{n:02}\", field: \"farmId\") "))
            .collect();
        assert_refused(
            &format!(
                "type Cow @model {{ farmId: ID }}\ntype Farm @model(list: false) {{ {relations} more: [Cow] @hasMany }}"
            ),
            "Farm.more: Cow uses every index slot already; give this relation one of another's with @hasMany(index:)",
        );
    }
}
