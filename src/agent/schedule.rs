//! When the agent runs and how long what it publishes stays valid.
//!
//! NFD drops a features file's labels at its `# +expiry-time`; the agent sets it to three
//! intervals after the pass, so labels outlive a missed pass or two but vanish when the agent has
//! stopped. With `--once` (a timer or cron job), the interval is the job's schedule, and the
//! expiry must be derived from it, or labels would expire between runs. All arithmetic is checked:
//! an interval is bounded, and a time that cannot be written as RFC 3339 is an error, not a
//! malformed label file.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

/// The longest interval accepted: one day. A longer schedule leaves labels stale for days.
pub const MAX_INTERVAL_SECS: u64 = 86_400;

/// How many intervals published labels stay valid.
pub const EXPIRY_INTERVALS: u32 = 3;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("an expiry of {EXPIRY_INTERVALS} x {secs} s after now is not a representable time")]
    Overflow { secs: u64 },
    #[error(
        "the label expiry time cannot be written as RFC 3339 (it must fall before the year 10000)"
    )]
    Unformattable,
}

/// The instant labels published `now` expire.
pub fn expiry(now: SystemTime, interval: Duration) -> Result<SystemTime, ScheduleError> {
    let overflow = || ScheduleError::Overflow {
        secs: interval.as_secs(),
    };
    let span = interval
        .checked_mul(EXPIRY_INTERVALS)
        .ok_or_else(overflow)?;
    now.checked_add(span).ok_or_else(overflow)
}

/// `t` as NFD's `+expiry-time` value (RFC 3339, UTC, whole seconds).
pub fn rfc3339(t: SystemTime) -> Result<String, ScheduleError> {
    let mut s = String::new();
    // humantime refuses (with a formatting error) years past 9999 rather than printing them.
    write!(s, "{}", humantime::format_rfc3339_seconds(t))
        .map_err(|_| ScheduleError::Unformattable)?;
    Ok(s)
}

/// How many intervals may pass since the last pass before the agent counts as stuck: its
/// liveness and readiness probe (`agent --health`) fails after that.
pub const STALE_INTERVALS: u32 = 2;

/// Whether a pass made at `last` is recent enough at `now` (a clock that went backwards counts
/// as recent: the pass happened, and the next one will say more).
pub fn is_fresh(last: SystemTime, now: SystemTime, interval: Duration) -> bool {
    let limit = interval.saturating_mul(STALE_INTERVALS);
    now.duration_since(last).map_or(true, |age| age <= limit)
}

/// Seconds since the Unix epoch, for metrics (0 for a clock set before 1970).
pub fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000;

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(NOW)
    }

    #[test]
    fn the_expiry_is_three_intervals_later() {
        let e = expiry(now(), Duration::from_secs(60)).unwrap();
        assert_eq!(rfc3339(e).unwrap(), "2027-01-15T08:03:00Z");
    }

    #[test]
    fn a_huge_interval_is_an_error_not_a_panic() {
        // 4e18 s: the multiplication by three overflows a Duration's seconds.
        let e = expiry(now(), Duration::from_secs(4_000_000_000_000_000_000));
        assert!(matches!(e, Err(ScheduleError::Overflow { .. })), "{e:?}");
        // 1e11 s: representable, but in the year 9000-something plus: no RFC 3339 form.
        let far = expiry(now(), Duration::from_secs(100_000_000_000)).unwrap();
        assert_eq!(rfc3339(far), Err(ScheduleError::Unformattable));
    }

    #[test]
    fn a_pass_is_fresh_for_two_intervals() {
        let i = Duration::from_secs(60);
        assert!(is_fresh(now(), now() + Duration::from_secs(120), i));
        assert!(!is_fresh(now(), now() + Duration::from_secs(121), i));
        assert!(is_fresh(now() + Duration::from_secs(5), now(), i));
    }

    #[test]
    fn the_largest_accepted_interval_formats() {
        let e = expiry(now(), Duration::from_secs(MAX_INTERVAL_SECS)).unwrap();
        assert_eq!(rfc3339(e).unwrap(), "2027-01-18T08:00:00Z");
    }
}
