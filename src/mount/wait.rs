//! The bounded wait for the pre-checks: at boot `nvidia_fs` or a rebuilt rpcrdma may still be on
//! its way, so the helper may re-check every [`INTERVAL`] for up to `wait` seconds (policy `wait`,
//! mount option `gds_wait=`; default 0 = check once).
//!
//! Only checks that can change by themselves are waited for: a transport-trap failure (an
//! existing non-RDMA mount) will not go away while the helper sleeps, so it ends the wait at
//! once. The wait never blocks boot forever: it is bounded here, and the mount unit's
//! `x-systemd.mount-timeout=` must exceed it plus `mount.nfs`'s own 2-minute retry.

use std::time::Duration;

use crate::checks::{registry, CheckId};
use crate::system::System;
use crate::verdict::Judgement;

/// How often the facts are re-read while waiting.
pub const INTERVAL: Duration = Duration::from_secs(2);

/// Runs `attempt` until nothing refuses, a refusal cannot clear by waiting, or `limit` is spent.
/// Progress goes to `log`, one line per change in what is waited for.
pub fn until_accepted<E>(
    limit: Duration,
    system: &dyn System,
    mut attempt: impl FnMut() -> Result<Judgement, E>,
    mut log: impl FnMut(String),
) -> Result<Judgement, E> {
    let start = system.now();
    let mut waiting_for: Vec<CheckId> = Vec::new();
    loop {
        let judgement = attempt()?;
        let blocking = judgement.refusing_ids();
        let elapsed = system.now().saturating_sub(start);
        if blocking.is_empty() {
            if !waiting_for.is_empty() {
                log(format!("pre-checks pass after {} s", elapsed.as_secs()));
            }
            return Ok(judgement);
        }
        if limit.is_zero() {
            return Ok(judgement);
        }
        if let Some(id) = blocking.iter().find(|id| !registry::get(**id).waitable) {
            log(format!("not waiting: {id} will not clear by itself"));
            return Ok(judgement);
        }
        if elapsed >= limit {
            log(format!(
                "gave up waiting after {} s; still failing: {}",
                elapsed.as_secs(),
                names(&blocking)
            ));
            return Ok(judgement);
        }
        if blocking != waiting_for {
            log(format!(
                "waiting up to {} s more for: {}",
                (limit - elapsed).as_secs(),
                names(&blocking)
            ));
            waiting_for = blocking;
        }
        system.sleep(INTERVAL.min(limit - elapsed));
    }
}

fn names(ids: &[CheckId]) -> String {
    ids.iter()
        .map(|i| i.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::CheckResult;
    use crate::policy::Policy;
    use crate::system::Fake;
    use crate::verdict::judge;
    use std::path::Path;

    fn judged(results: Vec<CheckResult>) -> Judgement {
        let p = Policy::default().for_mount(
            Path::new("/m"),
            crate::nfs::ShownExport::written("s:/x"),
            &crate::nfs::ServerAddrs::blind(),
            None,
            None,
        );
        judge(results, &p)
    }

    fn not_loaded() -> Judgement {
        judged(vec![CheckResult::fail(
            crate::checks::catalogue::nvidia_fs_loaded::ID,
            "not loaded",
        )])
    }

    fn ready() -> Judgement {
        judged(vec![CheckResult::pass(
            crate::checks::catalogue::nvidia_fs_loaded::ID,
            "loaded",
        )])
    }

    #[test]
    fn no_wait_checks_once() {
        let clock = Fake::new();
        let mut calls = 0;
        let mut log = Vec::new();
        let j = until_accepted::<()>(
            Duration::ZERO,
            &clock,
            || {
                calls += 1;
                Ok(not_loaded())
            },
            |l| log.push(l),
        )
        .unwrap();
        assert!(j.refused());
        assert_eq!(calls, 1);
        assert!(log.is_empty());
        assert!(clock.sleeps().is_empty());
    }

    #[test]
    fn waits_until_the_module_appears() {
        let clock = Fake::new();
        let mut calls = 0;
        let mut log = Vec::new();
        let j = until_accepted::<()>(
            Duration::from_secs(30),
            &clock,
            || {
                calls += 1;
                Ok(if calls < 4 { not_loaded() } else { ready() })
            },
            |l| log.push(l),
        )
        .unwrap();
        assert!(!j.refused());
        assert_eq!(calls, 4);
        assert_eq!(clock.sleeps(), [INTERVAL; 3]);
        assert_eq!(
            log,
            [
                "waiting up to 30 s more for: nvidia-fs-loaded",
                "pre-checks pass after 6 s"
            ]
        );
    }

    #[test]
    fn gives_up_at_the_limit_without_oversleeping() {
        let clock = Fake::new();
        let mut log = Vec::new();
        let j = until_accepted::<()>(
            Duration::from_secs(5),
            &clock,
            || Ok(not_loaded()),
            |l| log.push(l),
        )
        .unwrap();
        assert!(j.refused());
        assert_eq!(clock.sleeps(), [INTERVAL, INTERVAL, Duration::from_secs(1)]);
        assert_eq!(
            log.last().unwrap(),
            "gave up waiting after 5 s; still failing: nvidia-fs-loaded"
        );
    }

    #[test]
    fn the_transport_trap_is_not_waited_for() {
        let clock = Fake::new();
        let mut log = Vec::new();
        until_accepted::<()>(
            Duration::from_secs(60),
            &clock,
            || {
                Ok(judged(vec![
                    CheckResult::fail(crate::checks::catalogue::nvidia_fs_loaded::ID, "x"),
                    CheckResult::fail(crate::checks::catalogue::transport_trap::ID, "tcp"),
                ]))
            },
            |l| log.push(l),
        )
        .unwrap();
        assert!(clock.sleeps().is_empty());
        assert_eq!(
            log,
            ["not waiting: transport-trap will not clear by itself"]
        );
    }

    #[test]
    fn errors_stop_the_wait() {
        let clock = Fake::new();
        let r = until_accepted(
            Duration::from_secs(60),
            &clock,
            || Err::<Judgement, _>("unreadable"),
            |_| {},
        );
        assert_eq!(r.unwrap_err(), "unreadable");
    }
}
