//! How a migration run is told while it goes. Each migration is a [`Step::Started`], a
//! [`Step::Page`] after each Scan page, then a [`Step::Finished`]; [`Pace`] turns them into
//! lines: one when a migration ends, with its counts and time, and one at most every
//! [`PACE`] while it runs, with the items its scans evaluated, their rate over the last few
//! seconds and, against the table's item count (each migration scans the whole table; the
//! count is DynamoDB's estimate), the time left at that rate (see [`crate::progress`]).
//! `migrate` draws them with indicatif on a terminal and prints them as lines otherwise;
//! `serve` logs them and answers them on `/readyz` while it starts.

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use crate::progress::PACE;
use crate::progress::{Meter, Total};

use super::data::MigrationRun;

/// One step of a run.
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// A migration begins; its scans evaluate about this many items (the table's count).
    Started { name: &'a str, about: Option<u64> },
    /// A page of it was done.
    Page {
        name: &'a str,
        run: &'a MigrationRun,
    },
    /// It ended (applied, or found applied before).
    Finished {
        name: &'a str,
        run: &'a MigrationRun,
    },
}

/// Called with each step of a run.
pub type Progress<'a> = &'a (dyn Fn(Step<'_>) + Sync);

/// Turns steps into progress lines (see the module's doc).
pub struct Pace {
    every: Duration,
    state: Mutex<PaceState>,
}

struct PaceState {
    started: Instant,
    meter: Meter,
}

impl Default for Pace {
    fn default() -> Self {
        Pace::new(PACE)
    }
}

impl Pace {
    pub fn new(every: Duration) -> Pace {
        let now = Instant::now();
        Pace {
            every,
            state: Mutex::new(PaceState {
                started: now,
                meter: Meter::new(Total::Unknown, now),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PaceState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The line to tell of `step`, if one is due.
    pub fn line(&self, step: Step<'_>) -> Option<String> {
        match step {
            Step::Started { about, .. } => {
                let now = Instant::now();
                *self.lock() = PaceState {
                    started: now,
                    meter: Meter::new(Total::about(about), now),
                };
                None
            }
            Step::Page { name, run } => {
                let mut state = self.lock();
                let now = Instant::now();
                state.meter.record(run.evaluated as u64, now);
                let due = state.meter.due(self.every, now);
                due.then(|| format!("{name}: {}", describe(run, &state.meter)))
            }
            Step::Finished { name, run } if run.skipped => Some(format!("{name}: applied before")),
            Step::Finished { name, run } => {
                let took = self.lock().started.elapsed();
                Some(format!(
                    "{name}: done, {} items scanned, {} nodes of the type, {} changed, in {:.1} s",
                    run.evaluated,
                    run.scanned,
                    run.changed,
                    took.as_secs_f64()
                ))
            }
        }
    }

    /// Where the running migration stands after `run`'s last page, whether or not a line is
    /// due (what `/readyz` tells while `serve` upgrades formats).
    pub fn status(&self, run: &MigrationRun) -> String {
        let mut state = self.lock();
        if state.meter.done() != run.evaluated as u64 {
            state.meter.record(run.evaluated as u64, Instant::now());
        }
        describe(run, &state.meter)
    }

    /// The meter of the running migration, as its last page left it.
    pub fn meter(&self) -> Meter {
        self.lock().meter.clone()
    }
}

/// `4000 of about 20000 items scanned (3100 items/s), 900 changed, about 5 s left`.
pub fn describe(run: &MigrationRun, meter: &Meter) -> String {
    meter.describe("items scanned", &format!(", {} changed", run.changed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(evaluated: usize, changed: usize) -> MigrationRun {
        MigrationRun {
            name: "m".to_owned(),
            evaluated,
            changed,
            ..MigrationRun::default()
        }
    }

    #[test]
    fn a_running_migration_is_told_at_most_once_a_pace() {
        let pace = Pace::new(Duration::from_secs(3600));
        pace.line(Step::Started {
            name: "m",
            about: Some(1000),
        });
        assert_eq!(
            pace.line(Step::Page {
                name: "m",
                run: &run(100, 10)
            }),
            None,
            "not due yet"
        );
        let finished = pace
            .line(Step::Finished {
                name: "m",
                run: &run(1000, 100),
            })
            .expect("an ended migration is always told");
        assert!(
            finished.starts_with("m: done, 1000 items scanned"),
            "{finished}"
        );
    }

    #[test]
    fn a_page_tells_its_counts_and_the_status_never_takes_a_due_line() {
        let pace = Pace::new(Duration::ZERO);
        pace.line(Step::Started {
            name: "m",
            about: Some(1000),
        });
        let line = pace
            .line(Step::Page {
                name: "m",
                run: &run(250, 5),
            })
            .expect("due at once");
        assert!(
            line.starts_with("m: 250 of about 1000 items scanned ("),
            "{line}"
        );
        assert!(line.contains(", 5 changed"), "{line}");
        // `/readyz` asks for the status after every page: the log's lines stay due.
        let slow = Pace::new(Duration::from_secs(3600));
        slow.line(Step::Started {
            name: "m",
            about: None,
        });
        let status = slow.status(&run(10, 0));
        assert!(status.starts_with("10 items scanned"), "{status}");
        assert_eq!(slow.meter().done(), 10);
    }
}
