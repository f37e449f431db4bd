//! AppSync's scalars as stored text: the formats `AWSDate`, `AWSTime`, `AWSDateTime`,
//! `AWSEmail`, `AWSJSON`, `AWSURL`, `AWSPhone` and `AWSIPAddress` accept (`AWSTimestamp` is a
//! number), and the current time as an `AWSDateTime`. Front ends, `@default` and data
//! migrations check values with the same functions.

use crate::model::ScalarType;

/// Whether `text` is a value of `scalar`; any text is a `String`, an `ID` or an enum's
/// (those are checked where they are read).
pub fn valid_text(scalar: &ScalarType, text: &str) -> bool {
    match scalar {
        ScalarType::AwsDate => is_aws_date(text),
        ScalarType::AwsDateTime => is_aws_date_time(text),
        ScalarType::AwsEmail => is_aws_email(text),
        ScalarType::AwsTime => is_aws_time(text),
        ScalarType::AwsJson => serde_json::from_str::<serde_json::Value>(text).is_ok(),
        ScalarType::AwsUrl => is_aws_url(text),
        ScalarType::AwsPhone => is_aws_phone(text),
        ScalarType::AwsIpAddress => is_aws_ip_address(text),
        ScalarType::Int | ScalarType::AwsTimestamp => text.trim().parse::<i64>().is_ok(),
        ScalarType::Float => text.trim().parse::<f64>().is_ok_and(f64::is_finite),
        ScalarType::Boolean => text == "true" || text == "false",
        ScalarType::Id | ScalarType::String | ScalarType::Enum(_) => true,
    }
}

/// `hh:mm`, with optional `:ss` and fraction (1 to 9 digits), and an optional offset (`Z`,
/// `±hh:mm`), as AppSync's `AWSTime`.
pub fn is_aws_time(text: &str) -> bool {
    parse_aws_time(text).is_some()
}

/// An `AWSTime`: the clock time, and its offset (`None` for a local time, UTC for `Z`).
fn parse_aws_time(text: &str) -> Option<(time::Time, Option<time::UtcOffset>)> {
    let (clock, offset) = match text.find(['Z', '+', '-']) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let offset = match offset {
        "" => None,
        "Z" => Some(time::UtcOffset::UTC),
        offset => Some(
            time::UtcOffset::parse(
                offset,
                &time::macros::format_description!("[offset_hour]:[offset_minute]"),
            )
            .ok()?,
        ),
    };
    let formats = [
        time::macros::format_description!("[hour]:[minute]"),
        time::macros::format_description!("[hour]:[minute]:[second]"),
        time::macros::format_description!("[hour]:[minute]:[second].[subsecond]"),
    ];
    let clock = formats
        .iter()
        .find_map(|f| time::Time::parse(clock, f).ok())?;
    Some((clock, offset))
}

/// An absolute URL with a scheme (`https://…`, `mailto:…`), as AppSync's `AWSURL`.
pub fn is_aws_url(text: &str) -> bool {
    !text.contains(char::is_whitespace) && url::Url::parse(text).is_ok()
}

/// 7 to 15 digits, an optional leading `+`, and single spaces or hyphens between digit groups,
/// as AppSync's `AWSPhone`.
pub fn is_aws_phone(text: &str) -> bool {
    let body = text.strip_prefix('+').unwrap_or(text);
    let digits = body.chars().filter(char::is_ascii_digit).count();
    let groups_ok = body
        .split([' ', '-'])
        .all(|group| !group.is_empty() && group.chars().all(|c| c.is_ascii_digit()));
    groups_ok && (7..=15).contains(&digits)
}

/// An IPv4 or IPv6 address, with an optional `/prefix` no longer than the address.
pub fn is_aws_ip_address(text: &str) -> bool {
    let (address, prefix) = match text.split_once('/') {
        Some((address, prefix)) => (address, Some(prefix)),
        None => (text, None),
    };
    let Ok(address) = address.parse::<std::net::IpAddr>() else {
        return false;
    };
    let longest = if address.is_ipv4() { 32 } else { 128 };
    prefix.is_none_or(|p| p.parse::<u8>().is_ok_and(|p| p <= longest) && !p.starts_with('+'))
}

/// `YYYY-MM-DD`, a real calendar date.
pub fn is_aws_date(text: &str) -> bool {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(text, &format).is_ok()
}

/// An RFC 3339 timestamp.
pub fn is_aws_date_time(text: &str) -> bool {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).is_ok()
}

/// One `@` with text on both sides, a dot in the domain and no spaces.
pub fn is_aws_email(text: &str) -> bool {
    text.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && domain.contains('.')
            && !text.contains(char::is_whitespace)
            && !domain.contains('@')
    })
}

/// The current time as an `AWSDateTime`, in the form every stored one has.
pub fn now() -> String {
    utc_date_time(time::OffsetDateTime::now_utc())
}

/// An instant as stored: UTC with milliseconds, `2024-05-01T12:00:00.000Z`, fixed width so
/// that text order is time order.
fn utc_date_time(at: time::OffsetDateTime) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    at.to_offset(time::UtcOffset::UTC)
        .format(&format)
        .expect("a date of years 0 to 9999 formats")
}

/// The text a value of `scalar` is stored as, so that stored values sort and compare as what
/// they mean: an `AWSDateTime` in UTC with milliseconds (`2024-05-01T12:00:00.000Z`, as
/// Amplify's clients write them); an `AWSTime` with seconds and milliseconds, in UTC when it
/// has an offset (`07:00:24.500Z` for `12:30:24.5+05:30`). Other values, and text that is not
/// a whole value of the scalar (a `beginsWith` prefix), are kept as given. Refused: a value
/// more precise than a millisecond, which would lose digits.
pub fn stored_text<'a>(
    scalar: &ScalarType,
    text: &'a str,
) -> Result<std::borrow::Cow<'a, str>, String> {
    let too_precise = |nanos: u32| {
        (!nanos.is_multiple_of(1_000_000)).then(|| {
            format!(
                "{text}: {} values keep milliseconds; write at most three digits after the seconds",
                scalar.name()
            )
        })
    };
    match scalar {
        ScalarType::AwsDateTime => {
            let Ok(at) =
                time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
            else {
                return Ok(text.into());
            };
            if let Some(error) = too_precise(at.nanosecond()) {
                return Err(error);
            }
            Ok(utc_date_time(at).into())
        }
        ScalarType::AwsTime => {
            let Some((clock, offset)) = parse_aws_time(text) else {
                return Ok(text.into());
            };
            if let Some(error) = too_precise(clock.nanosecond()) {
                return Err(error);
            }
            let written =
                time::macros::format_description!("[hour]:[minute]:[second].[subsecond digits:3]");
            // A clock time at an offset: the same moment of the day in UTC.
            let (clock, zone) = match offset {
                None => (clock, ""),
                Some(offset) => (
                    clock - time::Duration::seconds(i64::from(offset.whole_seconds())),
                    "Z",
                ),
            };
            let clock = clock.format(&written).expect("a time of day formats");
            Ok(format!("{clock}{zone}").into())
        }
        _ => Ok(text.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_scalars_are_checked() {
        assert!(is_aws_date("2024-02-29"));
        assert!(!is_aws_date("2023-02-29"));
        assert!(!is_aws_date("yesterday"));
        assert!(is_aws_date_time("2024-02-29T10:00:00Z"));
        assert!(!is_aws_date_time("2024-02-29"));
        assert!(is_aws_email("ann@example.com"));
        assert!(!is_aws_email("ann at example.com"));
        assert!(!is_aws_email("@example.com"));
        assert!(is_aws_date_time(&now()));
        for time in [
            "12:30",
            "12:30:24",
            "12:30:24.5",
            "12:30:24.123456789Z",
            "23:59:59-05:30",
        ] {
            assert!(is_aws_time(time), "{time}");
        }
        for time in ["24:00", "12", "12:30:24+5", "12:30Zulu", "noon"] {
            assert!(!is_aws_time(time), "{time}");
        }
        for url in [
            "https://www.amazon.com/dp/B000NZW3KC/",
            "mailto:ann@example.com",
        ] {
            assert!(is_aws_url(url), "{url}");
        }
        for url in ["www.amazon.com", "https://exa mple.com", ""] {
            assert!(!is_aws_url(url), "{url}");
        }
        for phone in ["+1 555-0100 123", "555 0100 123", "+441234567890"] {
            assert!(is_aws_phone(phone), "{phone}");
        }
        for phone in ["+1  555", "555-CALL-NOW", "123", "+1234567890123456"] {
            assert!(!is_aws_phone(phone), "{phone}");
        }
        for ip in ["192.0.2.1", "192.0.2.0/24", "2001:db8::1", "2001:db8::/32"] {
            assert!(is_aws_ip_address(ip), "{ip}");
        }
        for ip in ["192.0.2.256", "192.0.2.0/33", "2001:db8::/129", "localhost"] {
            assert!(!is_aws_ip_address(ip), "{ip}");
        }
        assert!(valid_text(&ScalarType::AwsJson, r#"{"a": [1, 2]}"#));
        assert!(is_aws_date_time(&now()) && now().len() == "2024-05-01T12:00:00.000Z".len());
        assert!(!valid_text(&ScalarType::AwsJson, "{a: 1}"));
    }

    #[test]
    fn dates_and_times_are_stored_in_utc_with_milliseconds() {
        let table = [
            (
                ScalarType::AwsDateTime,
                "2024-02-29T12:30:24Z",
                "2024-02-29T12:30:24.000Z",
            ),
            (
                ScalarType::AwsDateTime,
                "2024-02-29T12:30:24.5+05:30",
                "2024-02-29T07:00:24.500Z",
            ),
            (
                ScalarType::AwsDateTime,
                "2024-03-01T01:00:00+02:00",
                "2024-02-29T23:00:00.000Z",
            ),
            (
                ScalarType::AwsDateTime,
                "2024-02-29T12:30:24.120000Z",
                "2024-02-29T12:30:24.120Z",
            ),
            (ScalarType::AwsTime, "12:30", "12:30:00.000"),
            (ScalarType::AwsTime, "12:30:24.5+05:30", "07:00:24.500Z"),
            (ScalarType::AwsTime, "01:00-02:00", "03:00:00.000Z"),
            (ScalarType::AwsTime, "23:30+01:00", "22:30:00.000Z"),
            (ScalarType::AwsTime, "00:30+01:00", "23:30:00.000Z"),
            // Prefixes and other scalars are kept.
            (ScalarType::AwsDateTime, "2024-02", "2024-02"),
            (ScalarType::AwsDate, "2024-02-29", "2024-02-29"),
            (ScalarType::String, "12:30", "12:30"),
        ];
        for (scalar, given, stored) in table {
            assert_eq!(
                stored_text(&scalar, given).as_deref(),
                Ok(stored),
                "{given}"
            );
        }
        for (scalar, given) in [
            (ScalarType::AwsDateTime, "2024-02-29T12:30:24.1234Z"),
            (ScalarType::AwsTime, "12:30:24.123456789"),
        ] {
            let error = stored_text(&scalar, given).expect_err("more than milliseconds");
            assert!(error.contains("keep milliseconds"), "{error}");
        }
    }
}
