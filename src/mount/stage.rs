//! The helper's own mount point: a fresh directory below the staging area
//! (`/run/nfs-gds/stage`, [`crate::host::mounts::staged`]) for each run.
//!
//! Each run makes `/run/nfs-gds/stage/<name>/` (mode 0700, root's), holds an exclusive `flock`
//! on the file `lock` in it for its whole life, and mounts on `mnt/` in it. Nobody else mounts
//! there, so every mount that appears on `mnt/` is this run's, whatever name the kernel gives it:
//! which mount is the helper's own is known by construction, never guessed from the table. The
//! run's directory is removed when the stage is dropped (the mount moved onto DIR, or unmounted).
//!
//! A helper killed with SIGKILL leaves its directory, and perhaps its mount, behind. The kernel
//! releases its lock with the process, so a directory whose lock can be taken is a dead run's:
//! the next helper (and the agent) unmounts what is on its `mnt/` and removes it, while a live
//! helper's directory, whose lock is held, is never touched. Making a run's directory and
//! sweeping dead ones both happen under an exclusive `flock` of the staging area itself, so a
//! sweep never sees a directory half made.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::FlockOperation;

use super::identity::MountIdentity;
use super::mounter::Mounter;
use crate::host::io::out_dir::{OutDir, Trust, RUN_DIR};
use crate::host::mounts::staged::STAGE_AREA;
use crate::host::mounts::{read_mount_table_in_flight, read_mounts_at, MountTable, MountsError};
use crate::host::Root;
use crate::system::System;

/// The staging area below the root.
const AREA: &str = "run/nfs-gds/stage";
/// The lock file in a run's directory.
const LOCK: &str = "lock";
/// The mount point in a run's directory.
const MNT: &str = "mnt";
/// How long a run waits for another one making its directory or sweeping.
const AREA_WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);

#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("cannot use the staging area {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("another nfs-gds helper has held the staging area {} for {} s; nothing was mounted", path.display(), AREA_WAIT.as_secs())]
    Busy { path: PathBuf },
    #[error(transparent)]
    Mounts(#[from] MountsError),
    #[error(transparent)]
    Isolate(#[from] super::mover::MoveError),
}

/// What a sweep found of a dead run: its directory, the mounts it unmounted there, and what it
/// could not undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Swept {
    pub dir: PathBuf,
    pub unmounted: Vec<PathBuf>,
    pub problems: Vec<String>,
}

/// "DIR (unmounted MOUNT, …; not undone: WHY)": what a sweep did for one dead run, as the
/// helper and the agent both say it.
impl std::fmt::Display for Swept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (", self.dir.display())?;
        if self.unmounted.is_empty() {
            f.write_str("nothing was mounted there")?;
        } else {
            let points: Vec<String> = self
                .unmounted
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            write!(f, "unmounted {}", points.join(", "))?;
        }
        if !self.problems.is_empty() {
            write!(f, "; not undone: {}", self.problems.join("; "))?;
        }
        f.write_str(")")
    }
}

/// This run's directory below the staging area, removed when dropped.
#[derive(Debug)]
pub struct Stage {
    area: OutDir,
    dir: OutDir,
    name: String,
    /// Held for the run's whole life: what tells a live run from a dead one.
    _lock: OwnedFd,
    mount_point: PathBuf,
}

/// The staging area, made (mode 0700) when missing, held to nfs-gds's own rules.
fn open_area(root: &Root) -> Result<OutDir, StageError> {
    let io = |source| StageError::Io {
        path: root.join(AREA),
        source,
    };
    let run = OutDir::open(root, RUN_DIR, Trust::Own).map_err(io)?;
    let area = run
        .subdir("stage", 0o700, true)
        .map_err(io)?
        .ok_or_else(|| io(std::io::ErrorKind::NotFound.into()))?;
    Ok(area)
}

/// Holds the staging area's own lock, waiting at most [`AREA_WAIT`] by `system`'s clock.
fn lock_area<'a>(area: &'a OutDir, system: &dyn System) -> Result<AreaLock<'a>, StageError> {
    let start = system.now();
    loop {
        match rustix::fs::flock(area.fd(), FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(AreaLock(area)),
            Err(rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::INTR) => {
                if system.now().saturating_sub(start) >= AREA_WAIT {
                    return Err(StageError::Busy {
                        path: area.path().to_owned(),
                    });
                }
                system.sleep(POLL);
            }
            Err(e) => {
                return Err(StageError::Io {
                    path: area.path().to_owned(),
                    source: e.into(),
                })
            }
        }
    }
}

struct AreaLock<'a>(&'a OutDir);

impl Drop for AreaLock<'_> {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(self.0.fd(), FlockOperation::Unlock);
    }
}

/// The mount point of the run directory `name`, as the mount table shows it.
fn mount_point_of(name: &str) -> PathBuf {
    Path::new(STAGE_AREA).join(name).join(MNT)
}

/// Removes a dead run's directory: the mounts on its mount point first (topmost first, each by
/// its identity), then the lock file and the directories. Called with the area lock held and the
/// run's lock taken.
fn clear(
    area: &OutDir,
    name: &str,
    table: &MountTable,
    system: &dyn System,
    mounter: &mut dyn Mounter,
) -> Swept {
    let point = mount_point_of(name);
    let mut swept = Swept {
        dir: Path::new(STAGE_AREA).join(name),
        unmounted: Vec::new(),
        problems: Vec::new(),
    };
    let mut on_point: Vec<_> = table
        .mounts
        .iter()
        .filter(|m| m.info.mount_point().starts_with(&point))
        .collect();
    // Children before parents, the last mounted first.
    on_point.reverse();
    for m in on_point {
        let identity = mounter.identify(MountIdentity::of(&m.info));
        match mounter.unmount(system, &identity) {
            Ok(()) => swept.unmounted.push(m.info.mount_point().to_owned()),
            Err(e) => swept.problems.push(e.to_string()),
        }
    }
    if swept.problems.is_empty() {
        if let Ok(Some(dir)) = area.subdir(name, 0o700, false) {
            let _ = dir.remove(LOCK);
            if let Err(e) = dir.remove_dir(MNT) {
                swept.problems.push(format!("{}: {e}", point.display()));
            }
        }
        if let Err(e) = area.remove_dir(name) {
            swept.problems.push(format!("{}: {e}", swept.dir.display()));
        }
    }
    swept
}

/// Sweeps the run directories whose lock can be taken (their helper is gone).
fn sweep_locked(
    root: &Root,
    area: &OutDir,
    system: &dyn System,
    mounter: &mut dyn Mounter,
) -> Result<Vec<Swept>, StageError> {
    let io = |source| StageError::Io {
        path: area.path().to_owned(),
        source,
    };
    let names = area.names().map_err(io)?;
    let mut table: Option<MountTable> = None;
    let mut swept = Vec::new();
    for name in &names {
        let Ok(Some(dir)) = area.subdir(name, 0o700, false) else {
            continue;
        };
        // A live run holds its lock; a directory without one is a run that died making it.
        let held = match dir.existing_lock_file(LOCK) {
            Ok(Some(fd)) => {
                match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
                    Ok(()) => Some(fd),
                    Err(_) => continue,
                }
            }
            Ok(None) => None,
            Err(_) => continue,
        };
        if table.is_none() {
            table = Some(read_mount_table_in_flight(root)?);
        }
        let table = table.as_ref().unwrap_or_else(|| unreachable!("read above"));
        swept.push(clear(area, name, table, system, mounter));
        drop(held);
    }
    Ok(swept)
}

impl Stage {
    /// Sweeps what dead runs left, makes the staging area a private mount when it is not one,
    /// and makes this run's directory, all under the area's lock. Returns what was swept.
    pub fn make(
        root: &Root,
        system: &dyn System,
        mounter: &mut dyn Mounter,
    ) -> Result<(Stage, Vec<Swept>), StageError> {
        let area = open_area(root)?;
        let lock = lock_area(&area, system)?;
        let swept = sweep_locked(root, &area, system, mounter)?;
        let at_area = read_mounts_at(root, Path::new(STAGE_AREA))?;
        mounter.isolate(system, Path::new(STAGE_AREA), &at_area)?;
        let io = |source| StageError::Io {
            path: area.path().to_owned(),
            source,
        };
        // The process id names the run; a name left by an earlier process with the same id
        // (swept above unless it is live, which it cannot be) gets a suffix.
        let pid = std::process::id();
        let mut made = None;
        for n in 0..100u32 {
            let name = if n == 0 {
                pid.to_string()
            } else {
                format!("{pid}-{n}")
            };
            if area.subdir(&name, 0o700, false).map_err(io)?.is_some() {
                continue;
            }
            let dir = area
                .subdir(&name, 0o700, true)
                .map_err(io)?
                .ok_or_else(|| io(std::io::ErrorKind::NotFound.into()))?;
            made = Some((name, dir));
            break;
        }
        let Some((name, dir)) = made else {
            return Err(io(std::io::Error::other("no free directory name")));
        };
        let io = |source| StageError::Io {
            path: dir.path().to_owned(),
            source,
        };
        let run_lock = dir.lock_file(LOCK).map_err(io)?;
        rustix::fs::flock(&run_lock, FlockOperation::NonBlockingLockExclusive)
            .map_err(|e| io(e.into()))?;
        dir.subdir(MNT, 0o700, true).map_err(io)?;
        drop(lock);
        let mount_point = mount_point_of(&name);
        Ok((
            Stage {
                area,
                dir,
                name,
                _lock: run_lock,
                mount_point,
            },
            swept,
        ))
    }

    /// Where this run mounts, as the mount table shows it.
    pub fn mount_point(&self) -> &Path {
        &self.mount_point
    }
}

impl Drop for Stage {
    /// Removes this run's directory; a mount still on it (it could be neither moved nor
    /// unmounted, and the helper said so) keeps it, for the next sweep.
    fn drop(&mut self) {
        if self.dir.remove_dir(MNT).is_ok() {
            let _ = self.dir.remove(LOCK);
            let _ = self.area.remove_dir(&self.name);
        }
    }
}

/// Sweeps the staging area for runs that died (the agent, each pass): never waits for the area
/// lock (a helper holding it sweeps itself), and makes nothing when there is no staging area.
pub fn sweep(
    root: &Root,
    system: &dyn System,
    mounter: &mut dyn Mounter,
) -> Result<Vec<Swept>, StageError> {
    let area = match OutDir::existing(root, AREA, Trust::Own) {
        Ok(Some(area)) => area,
        Ok(None) => return Ok(Vec::new()),
        Err(source) => {
            return Err(StageError::Io {
                path: root.join(AREA),
                source,
            })
        }
    };
    match rustix::fs::flock(area.fd(), FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(_) => return Ok(Vec::new()),
    }
    let _lock = AreaLock(&area);
    sweep_locked(root, &area, system, mounter)
}
