//! Many helpers at once against one simulated kernel that hands out the lowest free mount id
//! (as the kernel's IDA does), with other mounts coming and going beside them, half the servers
//! falling back to TCP. Every refused TCP mount must be gone afterwards and every RDMA mount kept.

use super::kernel_table::{name_new_mount, publish, NfsLine};
use super::*;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
struct KMount {
    id: u32,
    dev: u32,
    point: String,
    source: String,
    proto: &'static str,
    addr: String,
}

struct Kernel {
    dir: PathBuf,
    mounts: Vec<KMount>,
    publishes: u64,
    /// Mounts that got an id another mount had before.
    reused: usize,
    used: std::collections::HashSet<u32>,
}

impl Kernel {
    fn lowest_free<F: Fn(&KMount) -> u32>(&self, start: u32, f: F) -> u32 {
        (start..)
            .find(|i| !self.mounts.iter().any(|m| f(m) == *i))
            .unwrap()
    }

    /// A mount of `spec`, named as the kernel names it ([`name_new_mount`]).
    fn mount(&mut self, point: &str, spec: &str, proto: &'static str) -> u32 {
        let id = self.lowest_free(30, |m| m.id);
        let sb = name_new_mount(
            self.mounts
                .iter()
                .map(|m| (m.dev, m.source.as_str(), m.proto, m.addr.as_str())),
            spec,
            proto,
            || self.lowest_free(50, |m| m.dev),
        );
        if !self.used.insert(id) {
            self.reused += 1;
        }
        self.mounts.push(KMount {
            id,
            dev: sb.dev,
            point: point.into(),
            source: sb.source,
            proto: sb.proto,
            addr: sb.addr,
        });
        self.publish();
        id
    }

    /// Removes the topmost mount on `point` (all mounts here have parent 1, so the last).
    fn unmount_path(&mut self, point: &str) -> bool {
        match self.mounts.iter().rposition(|m| m.point == point) {
            Some(i) => {
                self.mounts.remove(i);
                self.publish();
                true
            }
            None => false,
        }
    }

    fn publish(&mut self) {
        self.publishes += 1;
        let lines: Vec<NfsLine> = self
            .mounts
            .iter()
            .map(|m| NfsLine {
                id: m.id,
                parent: 1,
                dev: m.dev,
                point: &m.point,
                source: &m.source,
                proto: m.proto,
                addr: &m.addr,
            })
            .collect();
        publish(&self.dir, self.publishes, (BEFORE, BEFORE_STATS), &lines);
    }
}

fn pause(seed: &mut u64) {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    std::thread::sleep(Duration::from_micros((*seed >> 33) % 400));
}

#[derive(Default, Debug)]
struct Tally {
    runs: usize,
    tcp_kept: usize,
    rdma_refused: usize,
    wrong_unmounts: usize,
}

#[test]
fn reused_mount_ids_never_keep_a_refused_mount_or_refuse_a_good_one() {
    const HELPERS: usize = 20;
    const RUNS: usize = 15;
    let t = gds_node();
    let kernel = Arc::new(Mutex::new(Kernel {
        dir: t.root().to_owned(),
        mounts: Vec::new(),
        publishes: 0,
        reused: 0,
        used: Default::default(),
    }));
    kernel.lock().unwrap().publish();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Unmounts of a mount other than the one that helper made.
    let wrong = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // Other mounts, mounted and unmounted all the time: their ids are freed and reused.
    let churn = {
        let kernel = kernel.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut seed = 7u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let point = format!("/mnt/other{}", seed % 5);
                kernel.lock().unwrap().mount(&point, "10.0.2.99:/e", "rdma");
                pause(&mut seed);
                kernel.lock().unwrap().unmount_path(&point);
                pause(&mut seed);
            }
        })
    };
    let helpers: Vec<_> = (0..HELPERS)
        .map(|i| {
            let kernel = kernel.clone();
            let tally = tally.clone();
            let root = t.root().to_owned();
            let wrong = wrong.clone();
            std::thread::spawn(move || {
                let proto: &'static str = if i % 2 == 0 { "rdma" } else { "tcp" };
                let target = format!("/mnt/gds{i}");
                let spec = format!("10.0.3.{i}:/export");
                let mut seed = i as u64 + 1;
                for _ in 0..RUNS {
                    let args = HelperArgs {
                        spec: spec.clone().into(),
                        dir: target.clone().into(),
                        options: vec!["rw".into()],
                        ..Default::default()
                    };
                    let req = MountRequest::new(&args, OptionDefaults::default(), Path::new("/"))
                        .unwrap();
                    let policy = parse("[checks]\nrpcrdma-hook-export = \"off\"\n")
                        .unwrap()
                        .for_mount(
                            &req.target,
                            crate::nfs::ShownExport::written(&req.spec),
                            &crate::nfs::ServerAddrs::blind(),
                            None,
                            None,
                        );
                    let mine = Arc::new(Mutex::new(None::<u32>));
                    let (k1, k2, mine1, mine2) =
                        (kernel.clone(), kernel.clone(), mine.clone(), mine.clone());
                    let (t1, s1) = (target.clone(), spec.clone());
                    let k2_wrong = wrong.clone();
                    let mut seed1 = seed;
                    let mut m = RecordingMounter::new(
                        move |_| {
                            pause(&mut seed1);
                            let id = k1.lock().unwrap().mount(&t1, &s1, proto);
                            *mine1.lock().unwrap() = Some(id);
                            pause(&mut seed1);
                            Ok(MountStatus::Exited(0))
                        },
                        // umount2 of the mount with that identity, as the real
                        // unmounter does through the descriptor it verified.
                        move |mount| {
                            let mut k = k2.lock().unwrap();
                            let at = k.mounts.iter().position(|m| {
                                m.id == mount.mount_id
                                    && format!("0:{}", m.dev) == mount.device
                                    && Path::new(&m.point) == mount.mount_point
                            });
                            let Some(at) = at else {
                                return Err(UnmountError::NotThatMount {
                                    target: mount.mount_point.clone(),
                                    why: "no such mount".into(),
                                });
                            };
                            if Some(k.mounts[at].id) != *mine2.lock().unwrap() {
                                k2_wrong.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            k.mounts.remove(at);
                            k.publish();
                            Ok(())
                        },
                    );
                    let r = Root::new(&root);
                    let clock = Fake::new();
                    let (mut out, mut err) = (Vec::new(), Vec::new());
                    let code = Helper {
                        root: &r,
                        mounter: &mut m,
                        system: &clock,
                        modprobe: None,
                        out: &mut out,
                        err: &mut err,
                    }
                    .run(&req, &policy);
                    let mut k = kernel.lock().unwrap();
                    let left = k.mounts.iter().any(|m| m.point == target);
                    let mut tl = tally.lock().unwrap();
                    tl.runs += 1;
                    if proto == "tcp" && left {
                        tl.tcp_kept += 1;
                    }
                    if proto == "rdma" && (code != 0 || !left) {
                        tl.rdma_refused += 1;
                    }
                    if m.calls.iter().any(|c| c.starts_with("unmount")) && proto == "rdma" {
                        tl.wrong_unmounts += 1;
                    }
                    drop(tl);
                    // The admin unmounts it again: its id is free for the next mount.
                    while k.unmount_path(&target) {}
                    drop(k);
                    pause(&mut seed);
                }
            })
        })
        .collect();
    for h in helpers {
        h.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    churn.join().unwrap();
    let mut tl = tally.lock().unwrap();
    tl.wrong_unmounts += wrong.load(std::sync::atomic::Ordering::Relaxed);
    let reused = kernel.lock().unwrap().reused;
    eprintln!("{tl:?}, {reused} mounts got a reused id");
    assert_eq!(tl.runs, HELPERS * RUNS);
    assert!(reused >= tl.runs / 2, "the test must reuse ids: {reused}");
    assert_eq!(
        (tl.tcp_kept, tl.rdma_refused, tl.wrong_unmounts),
        (0, 0, 0),
        "{tl:?}"
    );
}
