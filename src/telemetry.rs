//! Logging: structured `tracing` events to stderr, filtered by `RUST_LOG` (default `info`).
//! Panics are logged as events too, inside the span that panicked, so a request's panic is
//! logged once and carries its request id.
//!
//! Invariant: a warning is something for an operator to look at. DynamoDB's refusals that the
//! store expects and handles (a table not created yet, a failed condition on a unique value)
//! are not logged as warnings; a storage failure is logged once, where it is handled (`store`,
//! `graphql::errors`).
//!
//! # Why a filter on dynoxide's events
//!
//! The embedded store's HTTP server (`dynoxide::server`) logs every error answer at WARN with
//! its status, and has no setting for it: the `DescribeTable` of every first start and the
//! `TransactWriteItems` of every refused duplicate showed as warnings. A level directive for
//! its target would hide its 5xx answers too, so [`ExpectedStoreRefusals`] drops only the
//! WARN events whose `status` is a 4xx, whatever `RUST_LOG` says.

use std::fmt;
use std::io::IsTerminal as _;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::{Context, Filter, Layer as _, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;

/// The target of the embedded store's HTTP server's events.
const EMBEDDED_STORE_SERVER: &str = "dynoxide::server";

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(tracing_subscriber::filter::FilterExt::and(
            filter,
            ExpectedStoreRefusals,
        ));
    // A second init (tests start many apps in one process) keeps the first subscriber.
    let _ = tracing_subscriber::registry().with(stderr).try_init();
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        tracing::error!(panic = %message, %location, "panicked");
    }));
}

/// Lets every event through but the embedded store's warnings about the 4xx answers it gives
/// (see the module doc).
struct ExpectedStoreRefusals;

impl<S> Filter<S> for ExpectedStoreRefusals {
    fn enabled(&self, _: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        true
    }

    fn event_enabled(&self, event: &Event<'_>, _: &Context<'_, S>) -> bool {
        let metadata = event.metadata();
        if metadata.target() != EMBEDDED_STORE_SERVER || *metadata.level() != Level::WARN {
            return true;
        }
        let mut status = StatusField(String::new());
        event.record(&mut status);
        !is_expected_refusal(metadata.target(), *metadata.level(), &status.0)
    }
}

/// Whether an event is the embedded store's warning about a 4xx answer. `status` is the
/// event's `status` field as written (`400 Bad Request`).
fn is_expected_refusal(target: &str, level: Level, status: &str) -> bool {
    target == EMBEDDED_STORE_SERVER && level == Level::WARN && status.starts_with('4')
}

/// The `status` field of an event, as text.
struct StatusField(String);

impl Visit for StatusField {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "status" {
            self.0 = format!("{value:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_embedded_stores_warnings_about_4xx_answers_are_expected() {
        for (target, level, status, expected) in [
            ("dynoxide::server", Level::WARN, "400 Bad Request", true),
            ("dynoxide::server", Level::WARN, "404 Not Found", true),
            (
                "dynoxide::server",
                Level::WARN,
                "500 Internal Server Error",
                false,
            ),
            (
                "dynoxide::server",
                Level::WARN,
                "501 Not Implemented",
                false,
            ),
            ("dynoxide::server", Level::WARN, "", false),
            ("dynoxide::server", Level::ERROR, "400 Bad Request", false),
            ("tablegraph::store", Level::WARN, "400 Bad Request", false),
        ] {
            assert_eq!(
                is_expected_refusal(target, level, status),
                expected,
                "{target} {level} {status}"
            );
        }
    }
}
