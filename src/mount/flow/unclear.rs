//! The outcomes of a mount call where the helper cannot name one mount as its own: several new
//! mounts of SPEC's export at once, or none (mount.nfs failed, left an existing mount as it was,
//! or the mount appeared elsewhere, or only another server's did). Nothing here unmounts.

use super::{Attempt, FlowError, Helper};
use crate::checks::render::plural;
use crate::host::mounts::Mount;
use crate::mount::exit_code::FAIL;
use crate::mount::identity::new_mounts_of;
use crate::mount::request::MountRequest;
use crate::nfs::ServerAddrs;
use crate::policy::MountPolicy;
use crate::verdict::{Judgement, DOCTOR_HINT};

impl Helper<'_> {
    /// Several new mounts of SPEC on DIR at once, one of them refused: another mount of the same
    /// source ran beside this one, and which mount is nfs-gds's cannot be told, so none is
    /// unmounted.
    pub(super) fn refuse_several(&mut self, req: &MountRequest, judged: &[(&Mount, Judgement)]) {
        let mounts: Vec<&Mount> = judged.iter().map(|(m, _)| *m).collect();
        self.say(&format!(
            "REFUSED {}: {} new mounts of it appeared during this mount ({}), so another mount of the same source ran at the same time; nfs-gds cannot tell which one it made and unmounts none of them",
            Self::subject(req),
            mounts.len(),
            Self::list(&mounts)
        ));
        for (m, post) in judged.iter().filter(|(_, post)| post.refused()) {
            self.say(&format!(
                "mount id {} failed {} under policy enforce:",
                m.info.mount_id,
                plural(post.refusals.len(), "check")
            ));
            self.print_judgement_lines(post);
        }
        // Stacked on one point: each unmount takes the one on top, so the refused one lowest
        // down needs as many as there are from it to the top.
        let from_lowest_refused = judged
            .iter()
            .position(|(_, post)| post.refused())
            .map_or(0, |i| judged.len() - i);
        self.say(&format!(
            "check `findmnt {}` and unmount the refused mounts by hand: `{}` removes the mount on top; run it {} to reach mount id {}",
            req.target.display(),
            self.mounter.unmount_command(&req.target),
            if from_lowest_refused == 1 {
                "once".to_string()
            } else {
                format!("{from_lowest_refused} times")
            },
            judged
                .iter()
                .find(|(_, post)| post.refused())
                .map_or(0, |(m, _)| m.info.mount_id)
        ));
        self.say(DOCTOR_HINT);
    }

    /// No new mount of SPEC on DIR: mount.nfs failed, left an existing mount as it was, or the
    /// mount appeared elsewhere.
    pub(super) fn no_new_mount(
        &mut self,
        req: &MountRequest,
        policy: &MountPolicy,
        attempt: &Attempt,
        others: &[&Mount],
        addrs: &ServerAddrs,
    ) -> Result<u8, FlowError> {
        let Attempt {
            call,
            status,
            before,
            after,
        } = *attempt;
        if !status.success() {
            self.say(&format!(
                "{} failed ({status}); nothing was mounted on {}",
                self.mounter.plan(call).split(' ').next().unwrap_or("mount"),
                req.target.display()
            ));
            return Ok(status.exit_code());
        }
        match before.topmost_at(&req.target) {
            Some(old) => {
                let id = old.info.mount_id;
                self.say(&format!(
                    "{} was already mounted (mount id {id}, {}) and mount.nfs left it as it was; verifying that mount",
                    req.target.display(),
                    old.info.source()
                ));
                self.verify_existing(req, policy, after, id, "it was there before nfs-gds ran")
            }
            None => {
                let elsewhere: Vec<String> = new_mounts_of(before, after, &req.source, addrs)
                    .into_iter()
                    .map(|m| {
                        format!(
                            "{} (mount id {})",
                            m.info.mount_point().display(),
                            m.info.mount_id
                        )
                    })
                    .collect();
                if elsewhere.is_empty() && !others.is_empty() {
                    self.say(&format!(
                        "the mount of {} reported success, but the only new mounts on {} are not of {}'s export by name, address or shared superblock ({}); nfs-gds cannot tell which mount it made, so it judges and unmounts none: check `findmnt {}` and unmount what is not wanted: {}",
                        req.spec,
                        req.target.display(),
                        req.spec,
                        Self::list(others),
                        req.target.display(),
                        self.mounter.unmount_command(&req.target)
                    ));
                } else if elsewhere.is_empty() {
                    self.say(&format!(
                        "the mount of {} reported success, but no mount appeared on {}; not calling that a mount (if `findmnt --source {}` shows it under another path, unmount it there)",
                        req.spec,
                        req.target.display(),
                        req.spec
                    ));
                } else {
                    self.say(&format!(
                        "the mount of {} reported success, but it appeared on {} instead of {}: the path changed while mounting (a directory on it replaced or a symlink planted), or the same source was mounted there at the same time; nfs-gds did not verify it and does not unmount it: check it and unmount it by hand",
                        req.spec,
                        elsewhere.join(", "),
                        req.target.display()
                    ));
                }
                Ok(FAIL)
            }
        }
    }
}
