//! Sort-value encoding and the key decoders of `tablegraph::keys`.
//!
//! Properties, as `src/keys/mod.rs` and `src/keys/sort.rs` state them:
//! - `id_from_slot_sort_key` and `parse_edge_set_entry` never panic; what they return is valid
//!   (an id passes `validate_id`) and rebuilds the input;
//! - `id_from_slot_sort_key(slot_sort_key(v, id)) == Some(id)` for every valid id;
//! - `parse_edge_set_entry(edge_set_entry(t, id, s))` gives back `t`, `id` and `s`;
//! - `encode_sort_value` preserves order within one kind of input, also once `#<id>` is
//!   appended (a slot sort key): text case-insensitively (each character lower-cased, then by
//!   code point), integers and floats numerically (`-0.0 == 0.0`), `false < true`, ranked enum
//!   values by rank then name;
//! - encoded values never contain a character at or below `#` except through the `$` escape;
//! - `NULL_SORT_VALUE` sorts after every encoded value.
//!
//! What it does not promise, so is not asserted:
//! - text containing U+10FFFF: that character is reserved for null and is written as U+10FFFE,
//!   so "\u{10FFFE}" and "\u{10FFFF}" encode equally (order is kept, but not strictly);
//! - ranks above 999: the model refuses them (`@rank(value:)` takes 0 to 999, "ranks are
//!   written with three digits"); `"{rank:03}"` would put 1000 before 999;
//! - enum value names that are not GraphQL names (the model only makes GraphQL names);
//! - NaN floats, which GraphQL cannot express.

#![no_main]

use std::cmp::Ordering;

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use tablegraph::keys::{
    EdgeSetEntry, NULL_SORT_VALUE, SortInput, edge_set_entry, encode_sort_value,
    id_from_slot_sort_key, parse_edge_set_entry, slot_sort_key, validate_id,
};

/// The largest rank the model accepts.
const MAX_RANK: u16 = 999;

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    /// Fed to the decoders as it is.
    raw: &'a str,
    /// Two sort values of the same kind, for the order property.
    pair: Pair<'a>,
    ids: (&'a str, &'a str),
    edge_type: &'a str,
    /// An edge set entry's sort value, not necessarily an encoded one.
    entry_sort: Option<&'a str>,
}

#[derive(Debug, Arbitrary)]
enum Pair<'a> {
    Text(&'a str, &'a str),
    Int(i64, i64),
    Float(f64, f64),
    Bool(bool, bool),
    Ranked((u16, &'a str), (u16, &'a str)),
}

fuzz_target!(|input: Input<'_>| {
    check_decoders(input.raw);

    let (a, b, expected) = pair_order(&input.pair);
    let encoded_a = encode_sort_value(a);
    let encoded_b = encode_sort_value(b);
    let (id_a, id_b) = input.ids;

    for (value, encoded) in [(a, &encoded_a), (b, &encoded_b)] {
        check_encoded(value, encoded);
        for id in [id_a, id_b] {
            check_slot_sort_key(Some(encoded), id);
            check_edge_set_entry(input.edge_type, id, Some(encoded));
        }
    }
    for id in [id_a, id_b] {
        check_slot_sort_key(None, id);
        check_edge_set_entry(input.edge_type, id, None);
        check_edge_set_entry(input.edge_type, id, input.entry_sort);
    }

    if let Some(expected) = expected {
        check_order(
            &input.pair,
            (&encoded_a, id_a),
            (&encoded_b, id_b),
            expected,
        );
    }
});

/// The two inputs of a pair, and their order if the encoding promises one for them.
fn pair_order<'a>(pair: &Pair<'a>) -> (SortInput<'a>, SortInput<'a>, Option<Ordering>) {
    match *pair {
        Pair::Text(a, b) => {
            let order = lower(a).cmp(lower(b));
            // The reserved character collapses onto U+10FFFE: order is kept, but not strictly.
            let strict = !lower(a).chain(lower(b)).any(|c| c == '\u{10FFFF}');
            let expected = (strict || order == Ordering::Equal).then_some(order);
            (SortInput::Text(a), SortInput::Text(b), expected)
        }
        Pair::Int(a, b) => (SortInput::Int(a), SortInput::Int(b), Some(a.cmp(&b))),
        Pair::Float(a, b) => (SortInput::Float(a), SortInput::Float(b), a.partial_cmp(&b)),
        Pair::Bool(a, b) => (SortInput::Bool(a), SortInput::Bool(b), Some(a.cmp(&b))),
        Pair::Ranked((rank_a, name_a), (rank_b, name_b)) => {
            let valid = |rank: u16, name: &str| rank <= MAX_RANK && is_graphql_name(name);
            let expected = (valid(rank_a, name_a) && valid(rank_b, name_b))
                .then(|| (rank_a, name_a).cmp(&(rank_b, name_b)));
            (
                SortInput::Ranked {
                    rank: rank_a,
                    name: name_a,
                },
                SortInput::Ranked {
                    rank: rank_b,
                    name: name_b,
                },
                expected,
            )
        }
    }
}

/// Text as the encoding compares it.
fn lower(text: &str) -> impl Iterator<Item = char> + '_ {
    text.chars().flat_map(char::to_lowercase)
}

fn is_graphql_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn check_decoders(raw: &str) {
    if let Some(id) = id_from_slot_sort_key(raw) {
        assert_eq!(
            validate_id(id),
            Ok(()),
            "{raw:?} gave the invalid id {id:?}"
        );
        let sort_value = raw.strip_suffix(id).expect("the id ends the key");
        assert!(
            sort_value.is_empty() || sort_value.ends_with('#'),
            "{raw:?} gave {id:?}, which is not the whole last part"
        );
    }
    if let Some(entry) = parse_edge_set_entry(raw) {
        assert!(!entry.edge_type.is_empty() && !entry.edge_type.contains('#'));
        assert_eq!(validate_id(entry.to_id), Ok(()), "{raw:?} gave {entry:?}");
        assert_eq!(
            edge_set_entry(entry.edge_type, entry.to_id, entry.sort_value),
            raw,
            "{entry:?} does not rebuild its entry"
        );
    }
}

/// What every encoded value must look like.
fn check_encoded(value: SortInput<'_>, encoded: &str) {
    assert!(
        encoded < NULL_SORT_VALUE,
        "{value:?} encodes as {encoded:?}, not below null"
    );
    let ranked_with_other_name =
        matches!(value, SortInput::Ranked { name, .. } if !is_graphql_name(name));
    if !ranked_with_other_name {
        assert!(
            encoded.chars().all(|c| c >= '$'),
            "{value:?} encodes as {encoded:?}, with a character below '$'"
        );
    }
    if let SortInput::Text(text) = value {
        // The escape is exactly `$` and a letter, so the text is recoverable up to case.
        let mut chars = encoded.chars();
        let mut decoded = String::new();
        while let Some(c) = chars.next() {
            if c == '$' {
                let letter = chars.next().expect("an escape has its letter");
                assert!(
                    ('A'..='e').contains(&letter),
                    "{encoded:?}: escape ${letter}"
                );
                decoded.push(char::from(letter as u8 - b'A'));
            } else {
                decoded.push(c);
            }
        }
        let expected: String = lower(text)
            .map(|c| if c == '\u{10FFFF}' { '\u{10FFFE}' } else { c })
            .collect();
        assert_eq!(decoded, expected, "{value:?} encodes as {encoded:?}");
    }
}

fn check_slot_sort_key(sort_value: Option<&str>, id: &str) {
    let key = slot_sort_key(sort_value, id);
    let decoded = id_from_slot_sort_key(&key);
    if validate_id(id).is_ok() {
        assert_eq!(decoded, Some(id), "slot sort key {key:?}");
    }
}

fn check_edge_set_entry(edge_type: &str, to_id: &str, sort_value: Option<&str>) {
    let entry = edge_set_entry(edge_type, to_id, sort_value);
    let parsed = parse_edge_set_entry(&entry);
    if !edge_type.is_empty() && !edge_type.contains('#') && validate_id(to_id).is_ok() {
        assert_eq!(
            parsed,
            Some(EdgeSetEntry {
                edge_type,
                to_id,
                sort_value,
            }),
            "edge set entry {entry:?}"
        );
    }
}

/// Byte order of the encoded values, and of the slot sort keys made from them, is the order of
/// the inputs; between equal values, the ids decide.
fn check_order(pair: &Pair<'_>, a: (&str, &str), b: (&str, &str), expected: Ordering) {
    let (encoded_a, id_a) = a;
    let (encoded_b, id_b) = b;
    assert_eq!(
        encoded_a.cmp(encoded_b),
        expected,
        "{pair:?}: {encoded_a:?} vs {encoded_b:?}"
    );
    // Null sorts after every value of every kind.
    assert!(encoded_a < NULL_SORT_VALUE && encoded_b < NULL_SORT_VALUE);

    if validate_id(id_a).is_err() || validate_id(id_b).is_err() {
        return;
    }
    let key_a = slot_sort_key(Some(encoded_a), id_a);
    let key_b = slot_sort_key(Some(encoded_b), id_b);
    let expected_keys = expected.then(id_a.cmp(id_b));
    assert_eq!(
        key_a.cmp(&key_b),
        expected_keys,
        "{pair:?}: slot sort keys {key_a:?} vs {key_b:?}"
    );
    let null_key = slot_sort_key(Some(NULL_SORT_VALUE), id_a);
    assert!(
        key_a < null_key && key_b < null_key,
        "{pair:?}: null sorts first"
    );
}
