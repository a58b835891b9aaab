//! The mount guard's account of itself for `SRT_DEBUG`: what
//! [`Guard::start`] and [`Guard::check`] counted, formatted only when asked
//! (a run without `SRT_DEBUG` formats nothing).

use std::time::{Duration, Instant};

use super::Guard;

/// What [`Guard::start`] and [`Guard::check`] found: formatted only when
/// asked ([`Guard::summary`], `SRT_DEBUG`).
#[derive(Default)]
pub(super) struct Found {
    /// Why there is nothing to guard.
    pub(super) off: Option<String>,
    pub(super) required: usize,
    pub(super) optional: usize,
    pub(super) adding: usize,
    pub(super) unchecked: usize,
    pub(super) covered: Vec<Vec<u8>>,
    pub(super) watching_took: Duration,
    pub(super) began: Option<Instant>,
    pub(super) took: Duration,
}

impl Guard {
    /// What the guard watched, and how long its start took (`SRT_DEBUG`).
    pub fn summary(&self) -> String {
        let f = &self.found;
        if let Some(why) = &f.off {
            return format!("mount guard: off ({why}: nothing says which mounts protect anything)");
        }
        let Some(renames) = &self.renames else {
            return "mount guard: not started".into();
        };
        let covered: Vec<_> = f
            .covered
            .iter()
            .map(|c| String::from_utf8_lossy(c))
            .collect();
        format!(
            "mount guard: {} destinations of bubblewrap's restricting mounts watched, \
             and {} folders on their way for renames ({} us){}; all {} required ones mounted \
             before the command ({} -try forms not required, {} read-write binds \
             not watched, {} not searchable, {} covered by a later mount{}{}){}; {} us",
            self.watched.iter().filter(|w| w.active).count(),
            renames.folders(),
            f.watching_took.as_micros(),
            if renames.unwatched > 0 {
                format!(
                    " ({} not readable by this user, not watched)",
                    renames.unwatched
                )
            } else {
                String::new()
            },
            f.required,
            f.optional,
            f.adding,
            f.unchecked,
            covered.len(),
            if covered.is_empty() {
                ""
            } else {
                ", so protecting nothing in this sandbox: "
            },
            covered.join(", "),
            match self.held_by {
                Some(who) => format!("; {who} releases the watches after the stub's exit"),
                None => String::new(),
            },
            f.took.as_micros()
        )
    }
}
