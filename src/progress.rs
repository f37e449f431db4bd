//! How long work tells how far it got: `migrate`'s scans, `serve`'s format upgrade, `import`,
//! `export` and `check`. A [`Meter`] keeps the counts of the last [`WINDOW`] of the work, so that its
//! rate, and the time left at that rate, follow what the work does now rather than its average
//! since the start (a scan that skips fast over items it leaves alone, then slows down where it
//! writes, would otherwise promise "1 s left" for ten seconds). A total is exact, or, where it
//! comes from DynamoDB's item count (updated about every six hours, and counting items a scan
//! never reaches), an estimate said as "about"; past an estimate, the line tells the count alone.
//!
//! [`Shown`] puts the lines where a command's user sees them: a bar that redraws itself on a
//! terminal (indicatif), or one line at most every [`PACE`] otherwise.

use std::collections::VecDeque;
use std::io::Write as _;
use std::time::{Duration, Instant};

/// How often a running piece of work is told about at most.
pub const PACE: Duration = Duration::from_secs(2);

/// How far back the rate looks.
pub const WINDOW: Duration = Duration::from_secs(10);

/// How much work there is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Total {
    /// Exactly this many (the lines of a file being imported).
    Exact(u64),
    /// About this many (a table's item count).
    About(u64),
    /// Not known.
    Unknown,
}

impl Total {
    /// `About(count)`, or `Unknown` without a count.
    pub fn about(count: Option<u64>) -> Total {
        count.map_or(Total::Unknown, Total::About)
    }

    fn count(self) -> Option<u64> {
        match self {
            Total::Exact(count) | Total::About(count) => Some(count),
            Total::Unknown => None,
        }
    }
}

/// The counts of a piece of work over the last [`WINDOW`] (see the module's doc).
#[derive(Debug, Clone)]
pub struct Meter {
    total: Total,
    /// (when, how many were done then), oldest first; the first is the newest one older than
    /// the window, so that the rate spans the whole window once the work has run that long.
    samples: VecDeque<(Instant, u64)>,
    told: Instant,
}

impl Meter {
    /// A meter of work that begins `now`.
    pub fn new(total: Total, now: Instant) -> Meter {
        Meter {
            total,
            samples: VecDeque::from([(now, 0)]),
            told: now,
        }
    }

    /// `done` of the work were done at `now`.
    pub fn record(&mut self, done: u64, now: Instant) {
        self.samples.push_back((now, done));
        while self.samples.len() > 2 && now.duration_since(self.samples[1].0) >= WINDOW {
            self.samples.pop_front();
        }
    }

    /// How many were done, last recorded.
    pub fn done(&self) -> u64 {
        self.samples.back().map_or(0, |(_, done)| *done)
    }

    /// How many a second over the window; `None` before any time passed.
    pub fn rate(&self) -> Option<f64> {
        let (first, last) = (self.samples.front()?, self.samples.back()?);
        let seconds = last.0.duration_since(first.0).as_secs_f64();
        (seconds > 0.0).then(|| last.1.saturating_sub(first.1) as f64 / seconds)
    }

    /// At the window's rate, the time left; `None` without a total to go by, once it is
    /// reached, or before a rate.
    pub fn left(&self) -> Option<Duration> {
        let remaining = self
            .total
            .count()?
            .checked_sub(self.done())
            .filter(|remaining| *remaining > 0)?;
        let rate = self.rate().filter(|rate| *rate > 0.0)?;
        Some(Duration::from_secs_f64(remaining as f64 / rate))
    }

    /// Whether a line is due at `now`, [`PACE`] (or `every`) after the last; if so, it is told.
    pub fn due(&mut self, every: Duration, now: Instant) -> bool {
        let due = now.duration_since(self.told) >= every;
        if due {
            self.told = now;
        }
        due
    }

    /// `16000 of about 120000 items scanned (7460 items/s), about 14 s left`, with `what` as
    /// `items scanned`; `extra` (`, 900 changed`) goes before the time left.
    pub fn describe(&self, what: &str, extra: &str) -> String {
        let done = self.done();
        let of = match self.total {
            Total::Exact(total) => format!(" of {total}"),
            Total::About(about) if about >= done => format!(" of about {about}"),
            Total::About(_) | Total::Unknown => String::new(),
        };
        let rate = match self.rate() {
            Some(rate) => format!(" ({} {}/s)", rate_text(rate), unit(what)),
            None => String::new(),
        };
        let left = match self.left() {
            Some(left) => format!(", {}", left_text(left)),
            None => String::new(),
        };
        format!("{done}{of} {what}{rate}{extra}{left}")
    }
}

/// The noun of `what` (`items scanned` → `items`), for the rate.
fn unit(what: &str) -> &str {
    what.split(' ').next().unwrap_or(what)
}

/// A rate with the precision it deserves: `7460`, `12.5`, `0.25`.
pub fn rate_text(rate: f64) -> String {
    if rate >= 100.0 {
        format!("{rate:.0}")
    } else if rate >= 1.0 {
        format!("{rate:.1}")
    } else {
        format!("{rate:.2}")
    }
}

/// `about 14 s left`, `about 3 min left`, `less than a second left`.
pub fn left_text(left: Duration) -> String {
    let seconds = left.as_secs_f64();
    if seconds < 1.0 {
        "less than a second left".to_owned()
    } else if seconds < 120.0 {
        format!("about {} s left", seconds.round())
    } else {
        format!("about {} min left", (seconds / 60.0).round())
    }
}

/// Progress lines on stderr, where a command's user sees them (see the module's doc).
pub struct Shown {
    every: Duration,
    bar: Option<indicatif::ProgressBar>,
}

impl Shown {
    /// On a terminal, a bar for work of `total`; otherwise a line at most every `every`.
    pub fn new(terminal: bool, every: Duration, total: Total) -> Shown {
        let bar = terminal.then(|| {
            let bar = match total.count() {
                Some(count) => indicatif::ProgressBar::new(count),
                None => indicatif::ProgressBar::new_spinner(),
            };
            let style = indicatif::ProgressStyle::with_template("[{bar:30}] {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        Shown { every, bar }
    }

    /// On stderr as it goes: `line` on the bar, or as a line when one is due by `meter`.
    pub fn show(&mut self, meter: &mut Meter, line: impl FnOnce(&Meter) -> String) {
        match &self.bar {
            Some(bar) => {
                let done = meter.done();
                if bar.length().is_some_and(|length| done > length) {
                    bar.set_length(done);
                }
                bar.set_position(done);
                bar.set_message(line(meter));
            }
            None if meter.due(self.every, Instant::now()) => {
                let _ = writeln!(std::io::stderr().lock(), "{}", line(meter));
            }
            None => {}
        }
    }

    /// The work ended: the bar goes (the command tells the outcome itself).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Shown {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A piece of work told on stderr as it goes: its [`Meter`] and where it is [`Shown`].
pub struct Told {
    what: String,
    meter: Meter,
    shown: Shown,
}

impl Told {
    /// `what` (`items written`) of `total`, told on stderr at most every `every` when stderr
    /// is no terminal.
    pub fn on_stderr(what: &str, total: Total, every: Duration) -> Told {
        use std::io::IsTerminal as _;
        Told {
            what: what.to_owned(),
            meter: Meter::new(total, Instant::now()),
            shown: Shown::new(std::io::stderr().is_terminal(), every, total),
        }
    }

    /// `done` of the work are done; fewer than before begins the work again (a second scan).
    pub fn at(&mut self, done: u64) {
        let now = Instant::now();
        if done < self.meter.done() {
            self.meter = Meter::new(self.meter.total, now);
        }
        self.meter.record(done, now);
        let what = &self.what;
        self.shown
            .show(&mut self.meter, |meter| meter.describe(what, ""));
    }
}

/// A [`Told`] several tasks tell (the segments of a scan).
pub struct SharedTold(std::sync::Mutex<Told>);

impl SharedTold {
    pub fn new(told: Told) -> SharedTold {
        SharedTold(std::sync::Mutex::new(told))
    }

    /// `done` of the work are done.
    pub fn at(&self, done: u64) {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .at(done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Instant, seconds: f64) -> Instant {
        start + Duration::from_secs_f64(seconds)
    }

    #[test]
    fn the_rate_follows_the_last_window_not_the_average_since_the_start() {
        let start = Instant::now();
        let mut meter = Meter::new(Total::About(120_000), start);
        // Fast at first: 100,000 items in 2 s.
        meter.record(50_000, at(start, 1.0));
        meter.record(100_000, at(start, 2.0));
        // Then 1,000 items a second for 20 s.
        for second in 1..=20 {
            meter.record(100_000 + second * 1_000, at(start, 2.0 + second as f64));
        }
        let rate = meter.rate().expect("a rate");
        assert!((rate - 1_000.0).abs() < 1.0, "{rate}");
        // 120,000 done of about 120,000: nothing left to estimate.
        assert_eq!(meter.left(), None);
        let mut meter = Meter::new(Total::About(120_000), start);
        meter.record(100_000, at(start, 2.0));
        for second in 1..=12 {
            meter.record(100_000 + second * 1_000, at(start, 2.0 + second as f64));
        }
        // 8,000 left at 1,000/s: 8 s, where the average since the start (8,000/s) says 1 s.
        let left = meter.left().expect("a total").as_secs_f64();
        assert!((left - 8.0).abs() < 0.01, "{left}");
        assert_eq!(
            meter.describe("items scanned", ", 9 changed"),
            "112000 of about 120000 items scanned (1000 items/s), 9 changed, about 8 s left"
        );
    }

    #[test]
    fn past_an_estimated_total_the_count_is_told_alone() {
        let start = Instant::now();
        let mut meter = Meter::new(Total::About(100), start);
        meter.record(111, at(start, 3.0));
        assert_eq!(
            meter.describe("items scanned", ""),
            "111 items scanned (37.0 items/s)"
        );
        let mut exact = Meter::new(Total::Exact(400), start);
        exact.record(100, at(start, 400.0));
        assert_eq!(
            exact.describe("items written", ""),
            "100 of 400 items written (0.25 items/s), about 20 min left"
        );
        assert_eq!(
            Meter::new(Total::Unknown, start).describe("items", ""),
            "0 items"
        );
    }

    #[test]
    fn a_line_is_due_once_a_pace() {
        let start = Instant::now();
        let mut meter = Meter::new(Total::Unknown, start);
        assert!(!meter.due(PACE, at(start, 1.0)));
        assert!(meter.due(PACE, at(start, 2.0)));
        assert!(!meter.due(PACE, at(start, 3.9)));
        assert!(meter.due(PACE, at(start, 4.0)));
    }

    #[test]
    fn times_left_read_as_people_say_them() {
        assert_eq!(
            left_text(Duration::from_millis(300)),
            "less than a second left"
        );
        assert_eq!(left_text(Duration::from_secs(14)), "about 14 s left");
        assert_eq!(left_text(Duration::from_secs(600)), "about 10 min left");
        assert_eq!(rate_text(74_638.921_8), "74639");
    }
}
