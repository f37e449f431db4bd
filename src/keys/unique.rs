//! How a unique value is compared: the text that goes into its item's key.
//!
//! Two values are one when people read them as one. The value is put in Unicode's
//! compatibility form and case-folded, as Unicode's `NFKC_Casefold` does: NFKC (so fullwidth
//! "ＯＬＤ" is "OLD", the ligature "ﬁ" is "fi", and a composed "é" equals "e" with a combining
//! accent), then full case folding ("Straße" and "STRASSE" are both "strasse", Greek final
//! sigma is sigma), NFKC again, and default-ignorable code points (zero-width spaces and joiners,
//! soft hyphens, variation selectors) removed. One step goes beyond `NFKC_Casefold`: a dot above
//! on an `i` or `j` is dropped, because a lower-case `i` already has its dot, so "İstanbul" (whose
//! `İ` folds to `i` with a combining dot) and "istanbul" are one. Surrounding white space is
//! trimmed.
//!
//! A unique value must have something to compare: values that are empty once invisible
//! characters are removed, and values with bidirectional controls (which make a value display
//! differently from how it compares), are refused ([`unique_value_fault`]).
//!
//! Values written before this rule were trimmed and lower-cased only ([`normalize_unique_v1`]);
//! `tablegraph migrate` rewrites their items, and `tablegraph check` tells them apart.

use icu_casemap::CaseMapper;
use icu_normalizer::{ComposingNormalizerBorrowed, DecomposingNormalizerBorrowed};
use icu_properties::props::{BidiControl, DefaultIgnorableCodePoint, GeneralCategory};
use icu_properties::{CodePointMapData, CodePointSetData};

/// A unique value as it is compared (see the module doc).
///
/// ```
/// use tablegraph::keys::normalize_unique;
/// assert_eq!(normalize_unique(" Old MacDonald's "), "old macdonald's");
/// assert_eq!(normalize_unique("Straße"), normalize_unique("STRASSE"));
/// assert_eq!(normalize_unique("İstanbul"), "istanbul");
/// assert_eq!(normalize_unique("ＯＬＤ"), "old");
/// assert_eq!(normalize_unique("ﬁsh"), "fish");
/// assert_eq!(normalize_unique("Cafe\u{301}"), normalize_unique("Café"));
/// assert_eq!(normalize_unique("Old\u{200B}Farm"), "oldfarm");
/// ```
pub fn normalize_unique(value: &str) -> String {
    // ASCII is its own compatibility form, and holds nothing ignorable: lower-casing is folding.
    if value.is_ascii() {
        return value.trim().to_ascii_lowercase();
    }
    let ignorable = CodePointSetData::new::<DefaultIgnorableCodePoint>();
    let visible: String = value.chars().filter(|c| !ignorable.contains(*c)).collect();
    let nfkc = ComposingNormalizerBorrowed::new_nfkc();
    let folded = CaseMapper::new()
        .fold_string(&nfkc.normalize(&visible))
        .into_owned();
    // Decomposed, so that a dot above sits right after its letter, then composed again.
    let decomposed = DecomposingNormalizerBorrowed::new_nfkd().normalize(&folded);
    let mut undotted = String::with_capacity(decomposed.len());
    let mut previous = None;
    for c in decomposed.chars() {
        if c == '\u{307}' && matches!(previous, Some('i' | 'j')) {
            continue;
        }
        undotted.push(c);
        previous = Some(c);
    }
    nfkc.normalize(&undotted).trim().to_owned()
}

/// How unique values were compared before Unicode normalization: trimmed and lower-cased. Kept
/// to recognise the items written then.
///
/// ```
/// use tablegraph::keys::normalize_unique_v1;
/// assert_eq!(normalize_unique_v1(" Straße "), "straße");
/// ```
pub fn normalize_unique_v1(value: &str) -> String {
    value.trim().to_lowercase()
}

/// Why `value` cannot be a unique value, if it cannot: it has a bidirectional control, or
/// nothing is left of it once invisible characters and surrounding spaces are removed.
///
/// ```
/// use tablegraph::keys::unique_value_fault;
/// assert_eq!(unique_value_fault("Old MacDonald's"), None);
/// assert!(unique_value_fault("\u{200B}\u{200B}").is_some());
/// assert!(unique_value_fault("abc\u{202E}fed").is_some());
/// ```
pub fn unique_value_fault(value: &str) -> Option<&'static str> {
    let bidi = CodePointSetData::new::<BidiControl>();
    if !value.is_ascii() && value.chars().any(|c| bidi.contains(c)) {
        return Some("must not contain bidirectional control characters");
    }
    if normalize_unique(value).is_empty() || !value.chars().any(is_visible) {
        return Some("must have a visible character");
    }
    None
}

/// Whether `c` shows as something: not a space, not a control character (U+0000 among them),
/// not a format character (Unicode's category Cf: the interlinear annotation marks U+FFF9…
/// U+FFFB, the Egyptian hieroglyph joiners from U+13430, which are not all default-ignorable),
/// not default-ignorable, and not one of the blanks that render as nothing though Unicode
/// calls them letters or symbols (the braille blank U+2800, the Hangul fillers).
fn is_visible(c: char) -> bool {
    const BLANKS: [char; 5] = ['\u{2800}', '\u{3164}', '\u{FFA0}', '\u{115F}', '\u{1160}'];
    if c.is_whitespace() || c.is_control() || BLANKS.contains(&c) {
        return false;
    }
    if c.is_ascii() {
        return true;
    }
    CodePointMapData::<GeneralCategory>::new().get(c) != GeneralCategory::Format
        && !CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_people_read_as_one_are_one() {
        let pairs = [
            ("Straße", "STRASSE"),
            ("İstanbul", "istanbul"),
            ("İSTANBUL", "istanbul"),
            ("ＯＬＤ", "old"),
            ("ﬁsh", "FISH"),
            ("Café", "Cafe\u{301}"),
            ("CAFÉ", "cafe\u{301}"),
            ("ΣΊΣΥΦΟΣ", "σίσυφος"),
            ("Old\u{00AD}Farm", "oldfarm"),
            ("\u{3000}Meadow\u{3000}", "meadow"),
        ];
        for (a, b) in pairs {
            assert_eq!(normalize_unique(a), normalize_unique(b), "{a:?} and {b:?}");
        }
    }

    #[test]
    fn values_people_read_as_different_stay_different() {
        let pairs = [
            ("Café", "Cafe"),
            ("Ålesund", "Alesund"),
            ("ı", "i"),
            ("straße", "strase"),
        ];
        for (a, b) in pairs {
            assert_ne!(normalize_unique(a), normalize_unique(b), "{a:?} and {b:?}");
        }
    }

    #[test]
    fn ascii_values_keep_the_key_they_had() {
        for value in ["Old MacDonald's", "  padded\t", "MiXeD 42 #x"] {
            assert_eq!(normalize_unique(value), normalize_unique_v1(value));
        }
    }

    #[test]
    fn invisible_and_bidi_values_are_refused() {
        for value in [
            "",
            "   ",
            "\u{200B}",
            "\u{200B}\u{FEFF}\u{2060}",
            "\u{3000}\u{200D}",
            "\u{0}",
            "\u{0}\u{0}\u{0}",
            "\u{2800}\u{2800}",
            " \u{2800}\u{0} \u{3164}",
            // Format characters (category Cf) alone.
            "\u{FFF9}",
            "\u{FFF9}\u{FFFA}\u{FFFB}",
            "\u{13430}",
            "\u{13430}\u{13431}\u{13436}",
            "\u{110BD}",
        ] {
            assert_eq!(
                unique_value_fault(value),
                Some("must have a visible character"),
                "{value:?}"
            );
        }
        for value in [
            "abc\u{202E}",
            "\u{2066}x\u{2069}",
            "a\u{200F}b",
            "x\u{061C}",
        ] {
            assert_eq!(
                unique_value_fault(value),
                Some("must not contain bidirectional control characters"),
                "{value:?}"
            );
        }
        assert_eq!(unique_value_fault("Ålesund"), None);
        // A format character beside something visible is no refusal.
        assert_eq!(unique_value_fault("a\u{FFF9}b"), None);
        assert_eq!(unique_value_fault("\u{13000}\u{13430}\u{13001}"), None);
    }
}
