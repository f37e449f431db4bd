//! How a migration run is told while it goes. Each migration is a [`Step::Started`], a
//! [`Step::Page`] after each Scan page, then a [`Step::Finished`]; [`Pace`] turns them into
//! lines: one when a migration ends, with its counts and time, and one at most every
//! [`PACE`] while it runs, with the items its scans evaluated, their rate and, against the
//! table's item count (each migration scans the whole table), an estimate of the time left.
//! `migrate` draws them with indicatif on a terminal and prints them as lines otherwise;
//! `serve` logs them and answers them on `/readyz` while it starts.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::data::MigrationRun;

/// How often a running migration is told about at most.
pub const PACE: Duration = Duration::from_secs(2);

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
    /// When the last line of the running migration was told.
    told: Instant,
    about: Option<u64>,
}

/// What a line tells of a running migration.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Items its scans evaluated so far.
    pub evaluated: usize,
    /// Of about this many (the table's items).
    pub about: Option<u64>,
    /// Items evaluated a second so far.
    pub per_second: f64,
    /// At that rate, the time left; `None` without a count to go by.
    pub left: Option<Duration>,
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
                told: now,
                about: None,
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
                    told: now,
                    about,
                };
                None
            }
            Step::Page { name, run } => {
                let estimate = self.estimate(run, true)?;
                Some(format!("{name}: {}", describe(run, &estimate)))
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

    /// Where the running migration stands, when a line is due (or always, without `due`).
    pub fn estimate(&self, run: &MigrationRun, due: bool) -> Option<Estimate> {
        let mut state = self.lock();
        let now = Instant::now();
        if due && now.duration_since(state.told) < self.every {
            return None;
        }
        state.told = now;
        let elapsed = now.duration_since(state.started).as_secs_f64();
        let per_second = if elapsed > 0.0 {
            run.evaluated as f64 / elapsed
        } else {
            0.0
        };
        let left = state.about.filter(|_| per_second > 0.0).map(|about| {
            let remaining = about.saturating_sub(run.evaluated as u64) as f64;
            Duration::from_secs_f64(remaining / per_second)
        });
        Some(Estimate {
            evaluated: run.evaluated,
            about: state.about,
            per_second,
            left,
        })
    }
}

/// `4000 of about 20000 items scanned (3100 items/s), 900 changed, about 5 s left`.
pub fn describe(run: &MigrationRun, estimate: &Estimate) -> String {
    let of = match estimate.about {
        Some(about) => format!(" of about {about}"),
        None => String::new(),
    };
    let left = match estimate.left {
        Some(left) => format!(", about {} s left", left.as_secs().max(1)),
        None => String::new(),
    };
    format!(
        "{}{of} items scanned ({:.0} items/s), {} changed{left}",
        estimate.evaluated, estimate.per_second, run.changed
    )
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
    fn the_time_left_is_what_remains_at_the_rate_so_far() {
        let pace = Pace::new(Duration::ZERO);
        pace.line(Step::Started {
            name: "m",
            about: Some(1000),
        });
        let estimate = pace.estimate(&run(250, 5), false).expect("always");
        assert_eq!(estimate.evaluated, 250);
        assert!(estimate.per_second > 0.0);
        let left = estimate.left.expect("a count to go by").as_secs_f64();
        let expected = 750.0 / estimate.per_second;
        assert!((left - expected).abs() < 1e-6, "{left} vs {expected}");
        let line = describe(&run(250, 5), &estimate);
        assert!(
            line.starts_with("250 of about 1000 items scanned ("),
            "{line}"
        );
        assert!(line.contains("5 changed, about"), "{line}");
        // Without a count, no estimate of the time left.
        pace.line(Step::Started {
            name: "m",
            about: None,
        });
        assert_eq!(pace.estimate(&run(10, 0), false).and_then(|e| e.left), None);
    }
}
