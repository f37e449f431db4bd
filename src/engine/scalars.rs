//! AppSync's scalars as stored text: the formats `AWSDate`, `AWSDateTime` and `AWSEmail` accept,
//! and the current time as an `AWSDateTime`. Front ends and data migrations check values with
//! the same functions.

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

/// The current time as an `AWSDateTime`.
pub fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .expect("formatting the current UTC time as RFC 3339 cannot fail")
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
    }
}
