//! Sort values: the encoding that makes DynamoDB's byte order of `SKnn` equal the GraphQL order.

use crate::model::Model;

/// The sort value of a missing (null) field: above every encoded value, so nulls sort last.
pub const NULL_SORT_VALUE: &str = "\u{10FFFF}";

/// A field value to be encoded as a sort value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SortInput<'a> {
    Null,
    /// Strings, ids, enum names and ISO dates: compared case-insensitively.
    Text(&'a str),
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A value of a ranked enum: sorts by its rank, then its name. Ranks are written with
    /// three digits, so the order holds for ranks 0 to 999, the range `@rank` accepts.
    Ranked {
        rank: u16,
        name: &'a str,
    },
}

/// Encodes a sort value. Equal inputs give equal strings, and byte order of the strings is the
/// order of the inputs (within one kind of input). One exception: text containing U+10FFFF
/// (reserved for [`NULL_SORT_VALUE`]) is encoded with U+10FFFE there, so it ties with text that
/// has U+10FFFE in the same place.
///
/// ```
/// use tablegraph::keys::{encode_sort_value, SortInput, NULL_SORT_VALUE};
/// assert_eq!(encode_sort_value(SortInput::Text("Bessie")), "bessie");
/// assert_eq!(encode_sort_value(SortInput::Text("Old Mac")), "old$amac");
/// assert_eq!(encode_sort_value(SortInput::Int(5)), "8000000000000005");
/// assert_eq!(encode_sort_value(SortInput::Int(-1)), "7fffffffffffffff");
/// assert_eq!(encode_sort_value(SortInput::Float(1.5)), "bff8000000000000");
/// assert_eq!(encode_sort_value(SortInput::Bool(true)), "1");
/// assert_eq!(encode_sort_value(SortInput::Ranked { rank: 500, name: "LEAD" }), "500-LEAD");
/// assert_eq!(encode_sort_value(SortInput::Null), NULL_SORT_VALUE);
/// ```
pub fn encode_sort_value(input: SortInput<'_>) -> String {
    match input {
        SortInput::Null => NULL_SORT_VALUE.to_owned(),
        SortInput::Text(text) => encode_text(text),
        SortInput::Int(n) => format!("{:016x}", (n as u64) ^ (1 << 63)),
        SortInput::Float(x) => {
            // -0.0 and 0.0 are equal in GraphQL, so they must encode equally.
            let bits = if x == 0.0 { 0 } else { x.to_bits() };
            let ordered = if bits >> 63 == 1 {
                !bits
            } else {
                bits | (1 << 63)
            };
            format!("{ordered:016x}")
        }
        SortInput::Bool(b) => if b { "1" } else { "0" }.to_owned(),
        SortInput::Ranked { rank, name } => format!("{rank:03}-{name}"),
    }
}

/// The sort value of one value of an enum: `500-LEAD` when the enum is ranked, else its name,
/// compared case-insensitively like any text.
pub fn enum_sort_value(model: &Model, enum_name: &str, value: &str) -> String {
    let input = match model.rank_of(enum_name, value) {
        Some(rank) => SortInput::Ranked { rank, name: value },
        None => SortInput::Text(value),
    };
    encode_sort_value(input)
}

fn encode_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().flat_map(char::to_lowercase) {
        match c {
            // `$` is the escape character, and everything up to it must stay above `#`.
            '\0'..='$' => {
                out.push('$');
                out.push(char::from(b'A' + c as u8));
            }
            // Reserved for null, which sorts after every value.
            '\u{10FFFF}' => out.push('\u{10FFFE}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::layout::slot_sort_key;

    fn sort_keys_in_order(inputs: &[SortInput<'_>]) {
        let keys: Vec<String> = inputs
            .iter()
            .map(|input| slot_sort_key(Some(&encode_sort_value(*input)), "0190"))
            .collect();
        for pair in keys.windows(2) {
            assert!(
                pair[0] < pair[1],
                "{:?} should sort before {:?}",
                pair[0],
                pair[1]
            );
        }
    }

    #[test]
    fn text_sorts_case_insensitively_with_prefixes_first() {
        sort_keys_in_order(&[
            SortInput::Text(""),
            SortInput::Text(" "),
            SortInput::Text("#"),
            SortInput::Text("$"),
            SortInput::Text("ab"),
            SortInput::Text("Ab c"),
            SortInput::Text("ab!"),
            SortInput::Text("AB#"),
            SortInput::Text("ab$"),
            SortInput::Text("ab%"),
            SortInput::Text("abc"),
            SortInput::Text("Bessie"),
            SortInput::Text("daisy"),
            SortInput::Text("émile"),
            SortInput::Null,
        ]);
    }

    #[test]
    fn numbers_sort_numerically() {
        sort_keys_in_order(&[
            SortInput::Int(i64::MIN),
            SortInput::Int(-10),
            SortInput::Int(-1),
            SortInput::Int(0),
            SortInput::Int(9),
            SortInput::Int(10),
            SortInput::Int(i64::MAX),
            SortInput::Null,
        ]);
        sort_keys_in_order(&[
            SortInput::Float(f64::NEG_INFINITY),
            SortInput::Float(-2.5),
            SortInput::Float(-0.1),
            SortInput::Float(0.0),
            SortInput::Float(1e-9),
            SortInput::Float(2.5),
            SortInput::Float(1e300),
            SortInput::Null,
        ]);
    }

    #[test]
    fn negative_zero_equals_zero() {
        assert_eq!(
            encode_sort_value(SortInput::Float(-0.0)),
            encode_sort_value(SortInput::Float(0.0))
        );
    }

    #[test]
    fn ranked_values_sort_by_rank() {
        sort_keys_in_order(&[
            SortInput::Ranked {
                rank: 300,
                name: "TEAM",
            },
            SortInput::Ranked {
                rank: 400,
                name: "CONTRIBUTOR",
            },
            SortInput::Ranked {
                rank: 500,
                name: "LEAD",
            },
        ]);
    }

    #[test]
    fn booleans_sort_false_first() {
        sort_keys_in_order(&[
            SortInput::Bool(false),
            SortInput::Bool(true),
            SortInput::Null,
        ]);
    }
}
