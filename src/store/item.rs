//! Items as the rest of the server sees them: plain Rust values, converted to and from the SDK's
//! `AttributeValue` only here.

use std::collections::{BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;

/// One stored item: attribute name → value, its entries in a vector in no particular order.
///
/// An item has a handful of attributes, is built once from the SDK's answer and then mostly
/// read, and a request holds hundreds at once (two Koan pages: some 420). A vector takes one
/// 56-byte entry per attribute, where a hash table of ten attributes has sixteen 72-byte slots
/// (the largest page's peak memory fell by 6.5–8.5 MB in two A/B sets); it is built from the
/// SDK's map by moving the entries, without hashing their names; and a name is found by
/// comparing lengths first, which for ten short names costs about what hashing it did. A vector
/// kept sorted by name (`litemap`) was tried first: its sort and binary search ran 1.1 % more
/// instructions per Koan page than the hash table did (`bench/PROFILE.md`, "Items as vectors").
///
/// Every lookup is linear, which suits items of tens of attributes; an item with many more
/// (DynamoDB allows up to 400 KB) still answers, more slowly. Items read from the store or the
/// stream, or imported, are built without looking names up (`from_distinct`). Building one name
/// by name (`insert`, `collect`, `extend`: what a request's input does, bounded by the schema's
/// fields) and comparing two items (`tablegraph check`, node by node) take time that grows with
/// the square of the attributes: nothing for tens, noticeable for an item of thousands.
#[derive(Clone, Debug, Default)]
pub struct Item {
    entries: Vec<(String, AttrValue)>,
}

impl Item {
    pub fn new() -> Self {
        Self::default()
    }

    /// An item of these entries, whose names the caller knows to be distinct (a map's keys).
    pub(super) fn from_distinct(entries: Vec<(String, AttrValue)>) -> Self {
        Self { entries }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.entries.iter().position(|(n, _)| n == name)
    }

    pub fn get(&self, name: &str) -> Option<&AttrValue> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    /// Sets an attribute; returns the value it replaces, if any.
    pub fn insert(&mut self, name: String, value: AttrValue) -> Option<AttrValue> {
        match self.position(&name) {
            Some(at) => Some(std::mem::replace(&mut self.entries[at].1, value)),
            None => {
                self.entries.push((name, value));
                None
            }
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<AttrValue> {
        let at = self.position(name)?;
        Some(self.entries.swap_remove(at).1)
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut AttrValue) -> bool) {
        self.entries.retain_mut(|(n, v)| keep(n, v));
    }

    pub fn iter(&self) -> <&Item as IntoIterator>::IntoIter {
        self.into_iter()
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.entries.iter().map(|(n, _)| n)
    }

    /// The attribute this node item keeps its version in: `_version` where it has one (its type
    /// has a field of its own named `version`, which Amplify's language allows), else `version`.
    pub fn version_attribute(&self) -> &'static str {
        match self.contains_key(OWN_FIELD_VERSION) {
            true => OWN_FIELD_VERSION,
            false => VERSION,
        }
    }

    /// Whether this node item is a tombstone: deleted under conflict detection, kept until it
    /// is removed.
    pub fn is_tombstone(&self) -> bool {
        matches!(self.get(DELETED), Some(AttrValue::Bool(true)))
    }
}

/// The attribute that is true on a tombstone (Amplify's `_deleted`).
pub const DELETED: &str = "_deleted";

/// The attribute that holds a node's version: 1 at its create, one more at each change of its
/// content.
pub const VERSION: &str = "version";

/// Where a node keeps its version instead when its type has a field of its own named `version`:
/// the attribute Amplify keeps its own version in.
pub const OWN_FIELD_VERSION: &str = "_version";

/// Items are equal when they hold the same attributes, in whatever order.
impl PartialEq for Item {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(n, v)| other.get(n) == Some(v))
    }
}

/// Later entries replace earlier ones of the same name, as a map's `collect` does.
impl FromIterator<(String, AttrValue)> for Item {
    fn from_iter<I: IntoIterator<Item = (String, AttrValue)>>(entries: I) -> Self {
        let mut item = Item::new();
        item.extend(entries);
        item
    }
}

impl Extend<(String, AttrValue)> for Item {
    fn extend<I: IntoIterator<Item = (String, AttrValue)>>(&mut self, entries: I) {
        for (name, value) in entries {
            self.insert(name, value);
        }
    }
}

impl IntoIterator for Item {
    type Item = (String, AttrValue);
    type IntoIter = std::vec::IntoIter<(String, AttrValue)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a> IntoIterator for &'a Item {
    type Item = (&'a String, &'a AttrValue);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, AttrValue)>,
        fn(&'a (String, AttrValue)) -> (&'a String, &'a AttrValue),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(n, v)| (n, v))
    }
}

/// A String Set's members, distinct and in the order they sort, in one vector.
///
/// A node's edge set is one: each goal of a Koan page carries one of three entries, and a
/// request for two pages holds some 200 of them at once. A `BTreeSet` puts even three members in
/// a node with room for eleven (280 bytes, 320 in jemalloc's size class); a vector holds them in
/// 96 (the SDK's, kept as it hands it over, has room for four). Found by binary search;
/// inserting keeps the order, which is the order the edges are read in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StringSet {
    members: Vec<String>,
}

impl StringSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn contains(&self, member: &str) -> bool {
        self.find(member).is_ok()
    }

    fn find(&self, member: &str) -> Result<usize, usize> {
        self.members.binary_search_by(|m| m.as_str().cmp(member))
    }

    /// Adds a member; false if it was there already.
    pub fn insert(&mut self, member: String) -> bool {
        match self.find(&member) {
            Ok(_) => false,
            Err(at) => {
                self.members.insert(at, member);
                true
            }
        }
    }

    pub fn retain(&mut self, keep: impl FnMut(&String) -> bool) {
        self.members.retain(keep);
    }

    pub fn iter(&self) -> std::slice::Iter<'_, String> {
        self.members.iter()
    }
}

impl FromIterator<String> for StringSet {
    fn from_iter<I: IntoIterator<Item = String>>(members: I) -> Self {
        let mut members: Vec<String> = members.into_iter().collect();
        // The embedded store answers with a set's members sorted already; then this is one pass.
        members.sort_unstable();
        members.dedup();
        Self { members }
    }
}

impl Extend<String> for StringSet {
    fn extend<I: IntoIterator<Item = String>>(&mut self, members: I) {
        for member in members {
            self.insert(member);
        }
    }
}

impl<const N: usize> From<[String; N]> for StringSet {
    fn from(members: [String; N]) -> Self {
        members.into_iter().collect()
    }
}

impl From<BTreeSet<String>> for StringSet {
    fn from(members: BTreeSet<String>) -> Self {
        // Already sorted and distinct.
        Self {
            members: members.into_iter().collect(),
        }
    }
}

impl IntoIterator for StringSet {
    type Item = String;
    type IntoIter = std::vec::IntoIter<String>;

    fn into_iter(self) -> Self::IntoIter {
        self.members.into_iter()
    }
}

impl<'a> IntoIterator for &'a StringSet {
    type Item = &'a String;
    type IntoIter = std::slice::Iter<'a, String>;

    fn into_iter(self) -> Self::IntoIter {
        self.members.iter()
    }
}

/// A map keyed by text, hashed with foldhash instead of the standard library's SipHash.
///
/// The request's loader keeps its items and pending keys in these: the Koan page looks up some
/// 125 keys many times over. With SipHash for its maps and items, hashing took 2.31 M
/// instructions per Koan page; with foldhash, 1.50 M (`bench/PROFILE.md`). foldhash is what
/// `hashbrown` itself defaults to, with a random seed; every such map is bounded by the
/// request's limits (items, ids, keys), so no client can grow one without end.
pub type Map<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// The attribute value types tablegraph writes.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    S(String),
    /// A number, kept in DynamoDB's decimal text form so nothing is lost in transit.
    N(String),
    Bool(bool),
    /// A String Set (the node's edge set).
    Ss(StringSet),
    L(Vec<AttrValue>),
    M(Item),
    Null,
}

impl AttrValue {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttrValue::S(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            AttrValue::N(n) => n.parse().ok(),
            _ => None,
        }
    }
}

pub(super) fn to_sdk(value: &AttrValue) -> AttributeValue {
    match value {
        AttrValue::S(s) => AttributeValue::S(s.clone()),
        AttrValue::N(n) => AttributeValue::N(n.clone()),
        AttrValue::Bool(b) => AttributeValue::Bool(*b),
        AttrValue::Ss(set) => AttributeValue::Ss(set.iter().cloned().collect()),
        AttrValue::L(list) => AttributeValue::L(list.iter().map(to_sdk).collect()),
        AttrValue::M(map) => AttributeValue::M(item_to_sdk(map)),
        AttrValue::Null => AttributeValue::Null(true),
    }
}

pub(super) fn item_to_sdk(item: &Item) -> HashMap<String, AttributeValue> {
    item.iter().map(|(k, v)| (k.clone(), to_sdk(v))).collect()
}

/// Converts a stored value; types tablegraph never writes (binary, number sets) read as null.
pub(super) fn from_sdk(value: AttributeValue) -> AttrValue {
    match value {
        AttributeValue::S(s) => AttrValue::S(s),
        AttributeValue::N(n) => AttrValue::N(n),
        AttributeValue::Bool(b) => AttrValue::Bool(b),
        AttributeValue::Ss(set) => AttrValue::Ss(set.into_iter().collect()),
        AttributeValue::L(list) => AttrValue::L(list.into_iter().map(from_sdk).collect()),
        AttributeValue::M(map) => AttrValue::M(item_from_sdk(map)),
        _ => AttrValue::Null,
    }
}

pub(super) fn item_from_sdk(item: HashMap<String, AttributeValue>) -> Item {
    Item::from_distinct(item.into_iter().map(|(k, v)| (k, from_sdk(v))).collect())
}

/// DynamoDB's size of an item, as it counts towards the 400 KB limit: attribute names plus
/// values (numbers approximated by their text length, which never underestimates by much).
pub fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

/// A value's size as DynamoDB counts it toward an item's 400 KB, near enough.
pub fn value_size(value: &AttrValue) -> usize {
    match value {
        AttrValue::S(s) | AttrValue::N(s) => s.len(),
        AttrValue::Bool(_) | AttrValue::Null => 1,
        AttrValue::Ss(set) => set.iter().map(String::len).sum(),
        AttrValue::L(list) => 3 + list.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttrValue::M(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
    }
}

/// An item in DynamoDB's JSON form (`{"PK": {"S": "NODE#…"}, "version": {"N": "3"}}`), the
/// form of DynamoDB's own exports.
pub fn item_to_json(item: &Item) -> serde_json::Value {
    let mut entries: Vec<(&String, &AttrValue)> = item.iter().collect();
    entries.sort_by_key(|(name, _)| *name);
    serde_json::Value::Object(
        entries
            .into_iter()
            .map(|(name, value)| (name.clone(), value_to_json(value)))
            .collect(),
    )
}

fn value_to_json(value: &AttrValue) -> serde_json::Value {
    use serde_json::json;
    match value {
        AttrValue::S(s) => json!({ "S": s }),
        AttrValue::N(n) => json!({ "N": n }),
        AttrValue::Bool(b) => json!({ "BOOL": b }),
        AttrValue::Ss(set) => json!({ "SS": set.iter().collect::<Vec<_>>() }),
        AttrValue::L(list) => json!({ "L": list.iter().map(value_to_json).collect::<Vec<_>>() }),
        AttrValue::M(map) => json!({ "M": item_to_json(map) }),
        AttrValue::Null => json!({ "NULL": true }),
    }
}

/// A value as plain JSON, as an application sees it (a function's event): numbers as numbers,
/// sets and lists as arrays, maps as objects.
pub fn value_to_plain_json(value: &AttrValue) -> serde_json::Value {
    use serde_json::Value as Json;
    match value {
        AttrValue::S(s) => Json::from(s.as_str()),
        AttrValue::N(n) => n
            .parse::<serde_json::Number>()
            .map(Json::Number)
            .unwrap_or_else(|_| Json::from(n.as_str())),
        AttrValue::Bool(b) => Json::Bool(*b),
        AttrValue::Ss(set) => Json::Array(set.iter().map(|s| Json::from(s.as_str())).collect()),
        AttrValue::L(items) => Json::Array(items.iter().map(value_to_plain_json).collect()),
        AttrValue::M(item) => Json::Object(
            item.iter()
                .map(|(name, value)| (name.clone(), value_to_plain_json(value)))
                .collect(),
        ),
        AttrValue::Null => Json::Null,
    }
}

/// Plain JSON as a value: arrays as lists, objects as maps (no sets: JSON has none).
pub fn value_from_plain_json(value: serde_json::Value) -> AttrValue {
    use serde_json::Value as Json;
    match value {
        Json::Null => AttrValue::Null,
        Json::Bool(b) => AttrValue::Bool(b),
        Json::Number(n) => AttrValue::N(n.to_string()),
        Json::String(s) => AttrValue::S(s),
        Json::Array(items) => AttrValue::L(items.into_iter().map(value_from_plain_json).collect()),
        Json::Object(object) => AttrValue::M(
            object
                .into_iter()
                .map(|(name, value)| (name, value_from_plain_json(value)))
                .collect(),
        ),
    }
}

/// Reads an item in DynamoDB's JSON form; the message names what is wrong.
pub fn item_from_json(value: &serde_json::Value) -> Result<Item, String> {
    let fields = value.as_object().ok_or("an item must be a JSON object")?;
    // A JSON object's names are distinct.
    fields
        .iter()
        .map(|(name, value)| {
            Ok((
                name.clone(),
                value_from_json(value).map_err(|e| format!("{name}: {e}"))?,
            ))
        })
        .collect::<Result<_, String>>()
        .map(Item::from_distinct)
}

fn value_from_json(value: &serde_json::Value) -> Result<AttrValue, String> {
    let typed = value
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or("a value must be an object with one type key, like {\"S\": \"text\"}")?;
    let (kind, inner) = typed.iter().next().ok_or("an empty value")?;
    let text = || {
        inner
            .as_str()
            .map(str::to_owned)
            .ok_or(format!("{kind} takes a string"))
    };
    Ok(match kind.as_str() {
        "S" => AttrValue::S(text()?),
        "N" => {
            let n = text()?;
            let value = n
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("{n:?} is not a number"))?;
            // DynamoDB's range: magnitudes from 1e-130 to below 1e126, or zero.
            if value != 0.0 && !(1e-130..1e126).contains(&value.abs()) {
                return Err(format!("{n:?} is outside DynamoDB's number range"));
            }
            AttrValue::N(n)
        }
        "BOOL" => AttrValue::Bool(inner.as_bool().ok_or("BOOL takes true or false")?),
        "NULL" => AttrValue::Null,
        "SS" => {
            let set: std::collections::BTreeSet<String> = inner
                .as_array()
                .ok_or("SS takes a list of strings")?
                .iter()
                .map(|s| {
                    s.as_str()
                        .map(str::to_owned)
                        .ok_or("SS takes a list of strings")
                })
                .collect::<Result<_, _>>()?;
            if set.is_empty() {
                return Err("SS must not be empty".to_owned());
            }
            AttrValue::Ss(set.into())
        }
        "L" => AttrValue::L(
            inner
                .as_array()
                .ok_or("L takes a list")?
                .iter()
                .map(value_from_json)
                .collect::<Result<_, _>>()?,
        ),
        "M" => AttrValue::M(item_from_json(inner)?),
        other => return Err(format!("the type {other:?} is not one tablegraph stores")),
    })
}

/// What one Query call of `Store::query_page` read.
#[derive(Debug, Default, Clone)]
pub struct RangePage {
    /// The items within the bounds that met the filter, in the order read (shared: a page the
    /// read cache answers hands out what it holds).
    pub items: Vec<std::sync::Arc<Item>>,
    /// Items DynamoDB evaluated (`ScannedCount`), the filter's rejects included.
    pub evaluated: usize,
    /// The sort key of the last item evaluated, when the range may hold more past it.
    pub stopped_at: Option<String>,
}

/// One change the table's stream recorded: the item before and after the write.
#[derive(Debug, Clone, Default)]
pub struct StreamRecord {
    /// Its place in its shard.
    pub sequence: String,
    pub old: Option<Item>,
    pub new: Option<Item>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_the_sdk() {
        let item: Item = Item::from_iter([
            ("s".to_owned(), AttrValue::S("x".into())),
            ("n".to_owned(), AttrValue::N("-1.5".into())),
            ("b".to_owned(), AttrValue::Bool(true)),
            (
                "ss".to_owned(),
                AttrValue::Ss(["a".to_owned(), "b".to_owned()].into()),
            ),
            ("l".to_owned(), AttrValue::L(vec![AttrValue::Null])),
            (
                "m".to_owned(),
                AttrValue::M(Item::from_iter([(
                    "k".to_owned(),
                    AttrValue::S("v".into()),
                )])),
            ),
        ]);
        assert_eq!(item_from_sdk(item_to_sdk(&item)), item);
    }

    #[test]
    fn an_item_behaves_as_a_map_of_its_names() {
        let s = |text: &str| AttrValue::S(text.to_owned());
        let mut item = Item::from_iter([
            ("a".to_owned(), s("1")),
            ("bb".to_owned(), s("2")),
            ("a".to_owned(), s("3")),
        ]);
        assert_eq!(item.len(), 2, "a later entry replaces an earlier one");
        assert_eq!(item.get("a"), Some(&s("3")));
        assert_eq!(item.insert("bb".to_owned(), s("4")), Some(s("2")));
        assert_eq!(item.insert("c".to_owned(), s("5")), None);
        assert_eq!(item.remove("a"), Some(s("3")));
        assert_eq!(item.remove("a"), None);
        assert!(!item.contains_key("a") && item.contains_key("c"));
        item.insert("c".to_owned(), s("6"));
        // Equal whatever the order of the entries.
        assert_eq!(
            item,
            Item::from_iter([("c".to_owned(), s("6")), ("bb".to_owned(), s("4"))])
        );
        assert_ne!(item, Item::from_iter([("c".to_owned(), s("6"))]));
        assert_ne!(
            item,
            Item::from_iter([("c".to_owned(), s("6")), ("bb".to_owned(), s("x"))])
        );
        item.retain(|name, _| name == "c");
        assert_eq!(item.keys().collect::<Vec<_>>(), ["c"]);
    }

    #[test]
    fn a_string_set_keeps_its_members_distinct_and_sorted() {
        let mut set: StringSet = ["c", "a", "c", "b"]
            .map(str::to_owned)
            .into_iter()
            .collect();
        assert_eq!(set.iter().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(!set.insert("b".to_owned()), "b is a member already");
        assert!(set.insert("ab".to_owned()));
        assert_eq!(set.iter().collect::<Vec<_>>(), ["a", "ab", "b", "c"]);
        assert!(set.contains("ab") && !set.contains("d"));
        set.retain(|m| m != "a");
        set.extend(["d".to_owned(), "c".to_owned()]);
        assert_eq!(set.iter().collect::<Vec<_>>(), ["ab", "b", "c", "d"]);
        let same: StringSet = BTreeSet::from(["d", "c", "b", "ab"].map(str::to_owned)).into();
        assert_eq!(set, same);
    }

    #[test]
    fn size_counts_names_and_values() {
        let item: Item = Item::from_iter([("name".to_owned(), AttrValue::S("Bessie".into()))]);
        assert_eq!(item_size(&item), 10);
    }

    #[test]
    fn plain_json_round_trips_but_for_sets() {
        let json = serde_json::json!({
            "name": "Hill", "size": 12.5, "open": true, "gone": null,
            "tags": ["a", "b"], "address": { "city": "Lyon", "floor": 3 },
        });
        let value = value_from_plain_json(json.clone());
        assert_eq!(value_to_plain_json(&value), json);
        let AttrValue::M(item) = &value else {
            panic!("an object is a map: {value:?}");
        };
        assert_eq!(item.get("size"), Some(&AttrValue::N("12.5".to_owned())));
        let set = AttrValue::Ss(["x".to_owned(), "y".to_owned()].into_iter().collect());
        assert_eq!(value_to_plain_json(&set), serde_json::json!(["x", "y"]));
    }

    #[test]
    fn items_round_trip_through_dynamodb_json() {
        let item = Item::from_iter([
            ("PK".to_owned(), AttrValue::S("NODE#a".to_owned())),
            ("version".to_owned(), AttrValue::N("3".to_owned())),
            ("done".to_owned(), AttrValue::Bool(true)),
            ("note".to_owned(), AttrValue::Null),
            (
                "edges".to_owned(),
                AttrValue::Ss(["E#b#1".to_owned()].into()),
            ),
            (
                "tags".to_owned(),
                AttrValue::L(vec![AttrValue::S("x".to_owned())]),
            ),
            (
                "meta".to_owned(),
                AttrValue::M(Item::from_iter([(
                    "k".to_owned(),
                    AttrValue::N("1.5".to_owned()),
                )])),
            ),
        ]);
        let json = item_to_json(&item);
        assert_eq!(json["version"], serde_json::json!({ "N": "3" }));
        assert_eq!(item_from_json(&json), Ok(item));
        assert_eq!(
            item_from_json(&serde_json::json!({ "n": { "B": "AAE=" } })),
            Err("n: the type \"B\" is not one tablegraph stores".to_owned())
        );
    }
}
