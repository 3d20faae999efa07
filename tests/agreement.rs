//! Every command that judges a check gives one answer: for fixture nodes, mount tables and
//! policies (ports, `[[mount]]` tables by target and by export), `check`, `mount.nfs-gds -f`,
//! `verify`, `doctor`, `agent --once` and `policy show` agree on the status and level of each
//! check they share, on the verdict where they judge the same scope, and on which mounts are
//! meant for RDMA.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::mount_fixture::{Fixture, BEFORE, BEFORE_STATS};

mod output;

/// A check as one command judged it: status, and level where the command shows one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    status: String,
    level: Option<String>,
}

type Checks = BTreeMap<String, Seen>;

/// One NFS mount of a fixture table.
struct Nfs {
    id: u32,
    device: &'static str,
    source: &'static str,
    target: &'static str,
    /// What the options say.
    proto: &'static str,
    port: Option<u16>,
    /// What the `xprt:` line says.
    xprt: &'static str,
}

impl Nfs {
    fn info(&self) -> String {
        let port = self.port.map(|p| format!(",port={p}")).unwrap_or_default();
        format!(
            "{} 1 {} / {} rw,relatime - nfs4 {} rw,vers=4.2,hard,proto={}{port},addr=10.0.2.15\n",
            self.id, self.device, self.target, self.source, self.proto
        )
    }

    fn stats(&self) -> String {
        let port = self.port.map(|p| format!(",port={p}")).unwrap_or_default();
        format!(
            "device {} mounted on {} with fstype nfs4 statvers=1.1\n\
\topts:\trw,vers=4.2,hard,proto={}{port}\n\
\txprt:\t{} 0 0 1 0 0 1 1 0 1 0 0 0 0\n",
            self.source, self.target, self.proto, self.xprt
        )
    }
}

/// `10.0.2.15:/export` on `/mnt/gds` (mount id 70) over RDMA on `port`.
fn gds(port: u16) -> Nfs {
    Nfs {
        id: 70,
        device: "0:50",
        source: "10.0.2.15:/export",
        target: "/mnt/gds",
        proto: "rdma",
        port: Some(port),
        xprt: "rdma",
    }
}

/// A ready node with only [`gds`] on `port` mounted.
fn ready_with_gds(port: u16) -> Fixture {
    let f = Fixture::ready();
    let gds = gds(port);
    f.table(
        &format!("{BEFORE}{}", gds.info()),
        &format!("{BEFORE_STATS}{}", gds.stats()),
    );
    f
}

const PVC: &str = "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pvc-1/mount";

/// The mount tables: (name, mounts, fstab).
fn tables() -> Vec<(&'static str, Vec<Nfs>, &'static str)> {
    vec![
        ("no NFS", vec![], ""),
        ("rdma on 20049", vec![gds(20049)], ""),
        // The first wrong answer: a mount on another port than the policy's.
        ("rdma on 20050", vec![gds(20050)], ""),
        // The third: a TCP mount of a subdirectory of an export a `[[mount]]` table names.
        (
            "tcp pvc below filer:/datasets",
            vec![Nfs {
                id: 71,
                device: "0:51",
                source: "filer:/datasets/pvc-1",
                target: PVC,
                proto: "tcp",
                port: None,
                xprt: "tcp",
            }],
            "",
        ),
        // The transport trap: a mount fstab asks for RDMA that inherited a TCP client.
        (
            "trap with an fstab line",
            vec![
                Nfs {
                    id: 72,
                    device: "0:52",
                    source: "10.0.2.15:/home",
                    target: "/mnt/tcp",
                    proto: "tcp",
                    port: None,
                    xprt: "tcp",
                },
                Nfs {
                    id: 73,
                    device: "0:53",
                    source: "10.0.2.15:/export",
                    target: "/mnt/gds",
                    proto: "tcp",
                    port: None,
                    xprt: "tcp",
                },
            ],
            "10.0.2.15:/export /mnt/gds nfs-gds _netdev 0 0\n",
        ),
        // Linux 6.1: fstab asks nconnect=4, the kernel made one connection and kept no ask.
        (
            "nconnect in fstab, dropped from /proc",
            vec![gds(20049)],
            NCONNECT_FSTAB,
        ),
    ]
}

/// An fstab line asking `nconnect=4` of `/mnt/gds`, on its second line.
const NCONNECT_FSTAB: &str =
    "# GDS data\n10.0.2.15:/export /mnt/gds nfs-gds _netdev,vers=4.2,nconnect=4 0 0\n";

const POLICIES: &[&str] = &[
    "",
    // The second wrong answer: a failing node check let through.
    "[checks]\nnvidia-fs-devices = \"warn\"\nrpcrdma-loaded = \"warn\"\n",
    "[options]\nport = 20050\n",
    "[[mount]]\nsource = \"filer:/datasets\"\ndefault = \"warn\"\n",
    "default = \"warn\"\n[[mount]]\ntarget = \"/mnt/gds\"\n[mount.checks]\nmount-options = \"enforce\"\ntransport-trap = \"off\"\n",
];

/// How a node differs from a ready one.
type Change = fn(&Fixture);

/// The nodes: (name, how it differs from a ready one).
fn nodes() -> Vec<(&'static str, Change)> {
    vec![
        ("ready", |_| {}),
        ("no device node", |f| f.remove("dev/nvidia-fs0")),
        ("rpcrdma not loaded", |f| {
            f.write("proc/modules", "nvidia_fs 262144 0 - Live 0x0 (OE)\n");
            f.write("proc/kallsyms", "");
        }),
    ]
}

fn run(f: &Fixture, args: &[&str]) -> (i32, String, String) {
    let out = f.nfs_gds().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(text: &str, what: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: {e}: {text}"))
}

fn seen(c: &Value) -> Seen {
    Seen {
        status: c["status"].as_str().unwrap().to_string(),
        level: c["level"].as_str().map(str::to_string),
    }
}

fn checks_of(list: &Value) -> Checks {
    list.as_array()
        .map(|a| {
            a.iter()
                .map(|c| (c["id"].as_str().unwrap().to_string(), seen(c)))
                .collect()
        })
        .unwrap_or_default()
}

/// `policy show`'s levels, and which `[[mount]]` table it says applies.
fn policy_show(
    f: &Fixture,
    mount: Option<(&str, &str)>,
) -> (BTreeMap<String, String>, Option<String>) {
    let mut args = vec!["policy", "show"];
    if let Some((target, source)) = mount {
        args.extend(["--target", target, "--source", source]);
    }
    let (code, out, err) = run(f, &args);
    assert_eq!(code, 0, "policy show: {err}");
    let mut levels = BTreeMap::new();
    let mut table = None;
    for l in out.lines() {
        if let Some(rest) = l.strip_prefix("mount: [[mount]] table ") {
            table = rest.split_whitespace().next().map(str::to_string);
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        if l.starts_with("  ") && w.len() >= 2 {
            levels.insert(w[0].to_string(), w[1].to_string());
        }
    }
    (levels, table)
}

/// The verdict word of a text report's first line.
fn text_verdict(first_line: &str) -> &'static str {
    let word = first_line.rsplit_once(": ").map(|(_, w)| w).unwrap_or("");
    if word.starts_with("NOT READY") {
        "not-ready"
    } else if word.starts_with("READY, WITH WARNINGS") {
        "ready-with-warnings"
    } else if word.starts_with("READY") {
        "ready"
    } else {
        panic!("no verdict in {first_line:?}")
    }
}

/// `mount.nfs-gds -f`: its checks (levels from its journal lines) and its verdict.
fn fake_mount(f: &Fixture) -> (Checks, &'static str) {
    f.write("mnt/new/.keep", "");
    let out = f
        .helper()
        .args(["10.0.2.15:/other", "/mnt/new", "-f"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let verdict = text_verdict(stdout.lines().next().unwrap_or(""));
    let mut checks = Checks::new();
    for l in stdout.lines().skip(1) {
        let w: Vec<&str> = l.split_whitespace().collect();
        let status = match w.first() {
            Some(&"PASS") => "pass",
            Some(&"WARN") => "warn",
            Some(&"UNKNOWN") => "unknown",
            Some(&"FAIL") => "fail",
            Some(&"skip") => "skip",
            _ => continue,
        };
        if !l.starts_with("  ") || w.len() < 2 {
            continue;
        }
        checks.insert(
            w[1].to_string(),
            Seen {
                status: status.into(),
                level: None,
            },
        );
    }
    // `FAIL id [level]: …` journal lines give the level of every problem.
    for l in stderr.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        for i in 0..w.len().saturating_sub(2) {
            if let Some(level) = w[i + 2]
                .strip_prefix('[')
                .and_then(|x| x.strip_suffix("]:"))
            {
                if let Some(c) = checks.get_mut(w[i + 1]) {
                    c.level = Some(level.to_string());
                }
            }
        }
    }
    (checks, verdict)
}

/// The checks that judge only what a planned mount asks for (`Scope::Planned`).
fn planned_ids() -> BTreeSet<String> {
    nfs_gds::checks::registry::all()
        .iter()
        .filter(|c| matches!(c.scope, nfs_gds::checks::registry::Scope::Planned(_)))
        .map(|c| c.id.as_str().to_string())
        .collect()
}

/// Each check of `a` that `b` also judged has the same status, and the same level where both
/// show one.
fn agree(what: &str, a: (&str, &Checks), b: (&str, &Checks)) -> usize {
    let mut shared = 0;
    for (id, x) in a.1 {
        let Some(y) = b.1.get(id) else { continue };
        shared += 1;
        assert_eq!(
            x.status, y.status,
            "{what}: {id}: {} says {x:?}, {} says {y:?}",
            a.0, b.0
        );
        if let (Some(l), Some(m)) = (&x.level, &y.level) {
            assert_eq!(l, m, "{what}: {id}: {} says {x:?}, {} says {y:?}", a.0, b.0);
        }
    }
    shared
}

/// The levels `policy show` gives are the levels the checks were judged at.
fn levels_agree(what: &str, who: &str, checks: &Checks, levels: &BTreeMap<String, String>) {
    for (id, c) in checks {
        let (Some(level), Some(shown)) = (&c.level, levels.get(id)) else {
            continue;
        };
        assert_eq!(
            level, shown,
            "{what}: {id}: {who} judged at {level}, policy show says {shown}"
        );
    }
}

fn one_case(
    node: &str,
    change: Change,
    table: &str,
    mounts: &[Nfs],
    fstab: &str,
    policy: &str,
) -> usize {
    let what = format!("node {node:?}, table {table:?}, policy {policy:?}");
    let f = Fixture::ready();
    change(&f);
    let info: String = mounts.iter().map(Nfs::info).collect();
    let stats: String = mounts.iter().map(Nfs::stats).collect();
    f.table(
        &format!("{BEFORE}{info}"),
        &format!("{BEFORE_STATS}{stats}"),
    );
    if !fstab.is_empty() {
        f.write("etc/fstab", fstab);
    }
    f.policy(policy);
    let mut compared = 0;

    // The node: check, -f, doctor's and the agent's node checks, policy show.
    let (code, out, err) = run(&f, &["check", "--json"]);
    let check = json(&out, &format!("check: {err}"));
    let node = checks_of(&check["checks"]);
    let node_verdict = check["verdict"].as_str().unwrap().to_string();
    assert_eq!(
        code,
        i32::from(node_verdict == "not-ready"),
        "{what}: check's exit code"
    );
    let (node_levels, _) = policy_show(&f, None);
    levels_agree(&what, "check", &node, &node_levels);

    let (fake, fake_verdict) = fake_mount(&f);
    // A check of what a planned mount asks for judges `check`'s fstab lines there and the
    // helper's own options here: two subjects, so it is not compared between the two.
    let planned = planned_ids();
    let fake: Checks = fake
        .into_iter()
        .filter(|(id, _)| !planned.contains(id))
        .collect();
    let node_planned_quiet = node
        .iter()
        .filter(|(id, _)| planned.contains(*id))
        .all(|(_, c)| c.status == "pass" || c.status == "skip");
    let node_shared: Checks = node
        .iter()
        .filter(|(id, _)| !planned.contains(*id))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    compared += agree(&what, ("check", &node), ("mount -f", &fake));
    // No table covers the -f mount: it is judged at the node's levels, plus the trap it adds
    // for the new mount (a refusal there refuses whatever `check` says; a warning makes it
    // ready with warnings at best).
    let fake_node: Checks = fake
        .iter()
        .filter(|(id, _)| node.contains_key(*id))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let trap_refuses = fake
        .get("transport-trap")
        .is_some_and(|t| t.status == "fail" && t.level.as_deref() == Some("enforce"));
    if !trap_refuses && node_planned_quiet && fake_node.len() == node_shared.len() {
        let trap_warns = fake
            .get("transport-trap")
            .is_some_and(|t| t.status != "pass" && t.status != "skip");
        let want = if trap_warns && node_verdict == "ready" {
            "ready-with-warnings"
        } else {
            node_verdict.as_str()
        };
        assert_eq!(
            fake_verdict, want,
            "{what}: check says {node_verdict}, mount -f says {fake_verdict}"
        );
    }

    let (_, out, err) = run(&f, &["doctor", "--json"]);
    let doctor = json(&out, &format!("doctor: {err}"));
    let doctor_checks = doctor["checks"].as_array().unwrap().clone();

    f.write("out/.keep", "");
    let status_file = f.root().join("out/status.json");
    let (code, _, err) = run(
        &f,
        &[
            "agent",
            "--once",
            "--status-file",
            status_file.to_str().unwrap(),
            "--nfd-dir",
            f.root().join("out/nfd").to_str().unwrap(),
            "--textfile-dir",
            f.root().join("out/tf").to_str().unwrap(),
        ],
    );
    let agent = json(
        &std::fs::read_to_string(&status_file).unwrap_or_default(),
        &format!("agent: {err}"),
    );
    let agent_verdict = agent["verdict"].as_str().unwrap().to_string();
    assert_eq!(
        code,
        i32::from(agent_verdict == "not-ready"),
        "{what}: the agent's exit code"
    );
    compared += agree(
        &what,
        ("check", &node),
        ("agent", &checks_of(&agent["checks"])),
    );

    // The mounts: which are meant for RDMA, and their checks and verdicts.
    let agent_mounts: BTreeMap<String, &Value> = agent["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["mountpoint"].as_str().unwrap().to_string(), m))
        .collect();
    let mount_ids: BTreeSet<&str> = [
        "transport-trap",
        "mount-transport",
        "mount-options",
        "mount-connections",
        "mount-pnfs",
        "mount-localio",
    ]
    .into();
    let mut doctor_mounts: BTreeMap<String, Checks> = BTreeMap::new();
    let mut doctor_node = Checks::new();
    for c in &doctor_checks {
        let id = c["id"].as_str().unwrap();
        if mount_ids.contains(id) {
            let summary = c["summary"].as_str().unwrap();
            let m = mounts
                .iter()
                .find(|m| summary.starts_with(&format!("{}: ", m.target)))
                .or_else(|| {
                    // A summary that names its mount is not prefixed; the first named is it.
                    mounts
                        .iter()
                        .filter_map(|m| summary.find(m.target).map(|at| (at, m)))
                        .min_by_key(|(at, _)| *at)
                        .map(|(_, m)| m)
                })
                .unwrap_or_else(|| panic!("{what}: doctor's {id} names no mount: {summary}"));
            doctor_mounts
                .entry(m.target.to_string())
                .or_default()
                .insert(id.to_string(), seen(c));
        } else {
            doctor_node.insert(id.to_string(), seen(c));
        }
    }
    compared += agree(&what, ("check", &node), ("doctor", &doctor_node));
    let agent_set: BTreeSet<&String> = agent_mounts.keys().collect();
    let doctor_set: BTreeSet<&String> = doctor_mounts.keys().collect();
    assert_eq!(
        agent_set, doctor_set,
        "{what}: the agent and doctor disagree on which mounts are meant for RDMA"
    );

    for m in mounts {
        let (code, out, err) = run(&f, &["verify", m.target, "--json"]);
        let verify = json(&out, &format!("verify: {err}"));
        let verify_checks = checks_of(&verify["checks"]);
        let verify_verdict = verify["verdict"].as_str().unwrap();
        assert_eq!(
            code,
            i32::from(verify_verdict == "not-ready"),
            "{what}: verify's exit code"
        );
        let (levels, table) = policy_show(&f, Some((m.target, m.source)));
        levels_agree(&what, "verify", &verify_checks, &levels);
        let Some(agent_mount) = agent_mounts.get(m.target) else {
            continue;
        };
        // Meant for RDMA by a `[[mount]]` table: it is judged under that table.
        if agent_mount["meant_by"] == "policy" {
            assert!(table.is_some(), "{what}: the agent took {} for a [[mount]] table that policy show says does not apply", m.target);
        }
        let agent_verdict = agent_mount["verdict"].as_str().unwrap();
        assert_eq!(
            agent_verdict, verify_verdict,
            "{what}: {}: the agent says {agent_verdict}, verify {verify_verdict}",
            m.target
        );
        let agent_checks = checks_of(&agent_mount["checks"]);
        compared += agree(&what, ("verify", &verify_checks), ("agent", &agent_checks));
        levels_agree(&what, "the agent", &agent_checks, &levels);
        let doctor_checks = &doctor_mounts[m.target];
        compared += agree(&what, ("verify", &verify_checks), ("doctor", doctor_checks));
        levels_agree(&what, "doctor", doctor_checks, &levels);
    }
    // The node's verdict over its mounts: the agent's and doctor's are the worst of them all.
    let rank = |v: &str| {
        ["ready", "ready-with-warnings", "not-ready"]
            .iter()
            .position(|w| *w == v)
            .unwrap()
    };
    let worst = agent_mounts
        .values()
        .map(|m| m["verdict"].as_str().unwrap())
        .chain([node_verdict.as_str()])
        .max_by_key(|v| rank(v))
        .unwrap()
        .to_string();
    assert_eq!(agent_verdict, worst, "{what}: the agent's verdict");
    assert_eq!(
        doctor["verdict"].as_str().unwrap(),
        worst,
        "{what}: doctor's verdict"
    );
    compared
}

#[test]
fn every_command_gives_one_answer_for_each_check_and_verdict() {
    let (mut compared, mut cases) = (0, 0);
    let mut disagreements = Vec::new();
    for (node, change) in nodes() {
        for (table, mounts, fstab) in tables() {
            for policy in POLICIES {
                // Every case runs, so one failure shows every disagreement at once.
                let case = std::panic::catch_unwind(|| {
                    one_case(node, change, table, &mounts, fstab, policy)
                });
                match case {
                    Ok(n) => compared += n,
                    Err(e) => {
                        disagreements.push(e.downcast_ref::<String>().cloned().unwrap_or_else(
                            || format!("node {node:?}, table {table:?}, policy {policy:?}"),
                        ))
                    }
                }
                cases += 1;
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {cases} cases disagree:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    // Every case compared checks across commands, most of them several.
    assert!(
        compared > cases * 10,
        "{compared} comparisons in {cases} cases"
    );
}

/// A mount the helper recorded on another port than the policy's: every command expects the
/// recorded port, and so does doctor on a bundle collected from the node.
#[test]
fn a_recorded_port_is_the_expected_port_everywhere_and_in_a_bundle() {
    let f = ready_with_gds(20050);
    let options = |root: &std::path::Path, args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nfs-gds"))
            .env_clear()
            .arg("--root")
            .arg(root)
            .args(args)
            .output()
            .unwrap();
        let doc = json(&String::from_utf8_lossy(&out.stdout), "json");
        let checks = checks_of(&doc["checks"]);
        let found = checks.iter().find(|(id, _)| *id == "mount-options");
        found.map(|(_, c)| c.status.clone()).unwrap_or_default()
    };
    // Unrecorded, 20050 is the wrong port for verify and doctor alike.
    assert_eq!(options(f.root(), &["verify", "/mnt/gds", "--json"]), "fail");
    assert_eq!(options(f.root(), &["doctor", "--json"]), "fail");
    f.write(
        "run/nfs-gds/mounts/70-0.50.json",
        r#"{"source":"10.0.2.15:/export","target":"/mnt/gds","device":"0:50","mount_id":70,"port":20050}"#,
    );
    assert_eq!(options(f.root(), &["verify", "/mnt/gds", "--json"]), "pass");
    assert_eq!(options(f.root(), &["doctor", "--json"]), "pass");
    let (code, _, err) = run(&f, &["agent", "--once"]);
    assert_eq!(code, 0, "{err}");
    let status = f.root().join("run/nfs-gds/status.json");
    let agent = json(&std::fs::read_to_string(status).unwrap(), "status");
    assert_eq!(agent["mounts"][0]["meant_by"], "recorded");
    assert_eq!(agent["mounts"][0]["verdict"], "ready");
    // The bundle carries the record, so doctor replays it to the same answer.
    let archive = f.root().join("out/node.tgz");
    f.write("out/.keep", "");
    let (code, _, err) = run(&f, &["collect", "-o", archive.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let bundle = tempfile::tempdir().unwrap();
    let file = std::fs::File::open(&archive).unwrap();
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(bundle.path())
        .unwrap();
    assert_eq!(options(bundle.path(), &["doctor", "--json"]), "pass");
}

/// The `mount-connections` status and summary a command's JSON gives for `/mnt/gds`.
fn connections_in(doc: &Value) -> (String, String) {
    let c = doc["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["id"] == "mount-connections")
        .unwrap_or_else(|| panic!("no mount-connections in {doc}"));
    (
        c["status"].as_str().unwrap().to_string(),
        c["summary"].as_str().unwrap().to_string(),
    )
}

/// Linux 6.1 after `vers=4.2,proto=rdma,nconnect=4`: one `xprt: rdma` line and no `nconnect=`
/// in /proc. Asked in fstab or in the helper's record, `verify`, `doctor` and the agent give
/// the same warning, naming where the ask came from; with neither, /proc alone shows no ask.
#[test]
fn an_nconnect_ask_the_kernel_dropped_is_the_same_warning_everywhere() {
    let f = ready_with_gds(20049);
    let every_command = |f: &Fixture| -> Vec<(String, String)> {
        let (_, out, err) = run(f, &["verify", "/mnt/gds", "--json"]);
        let verify = connections_in(&json(&out, &format!("verify: {err}")));
        let (_, out, err) = run(f, &["doctor", "--json"]);
        let doctor = connections_in(&json(&out, &format!("doctor: {err}")));
        f.write("out/.keep", "");
        let status = f.root().join("out/status.json");
        let (_, _, err) = run(
            f,
            &["agent", "--once", "--status-file", status.to_str().unwrap()],
        );
        let agent = json(&std::fs::read_to_string(&status).unwrap_or_default(), &err);
        let agent = if agent["mounts"][0]["checks"].is_array() {
            connections_in(&agent["mounts"][0])
        } else {
            // A ready mount keeps no checks: every one passed.
            ("pass".to_string(), String::new())
        };
        vec![verify, doctor, agent]
    };
    // Nothing but /proc: the blind spot (the mount is meant for RDMA by its options).
    for (status, summary) in every_command(&f) {
        assert_eq!(status, "pass", "{summary}");
    }
    f.write("etc/fstab", NCONNECT_FSTAB);
    for (status, summary) in every_command(&f) {
        assert_eq!(status, "warn", "{summary}");
        assert!(
            summary.contains("nconnect=4 asked (fstab line 2), 1 RDMA connection: this kernel predates NFS-over-RDMA nconnect for v4.x"),
            "{summary}"
        );
        assert!(summary.contains("the kernel dropped the ask"), "{summary}");
    }
    // The helper's record beats the fstab line.
    f.write(
        "run/nfs-gds/mounts/70-0.50.json",
        r#"{"source":"10.0.2.15:/export","target":"/mnt/gds","device":"0:50","mount_id":70,"port":20049,"options":"rw,nconnect=8,vers=4.2,proto=rdma,port=20049"}"#,
    );
    for (status, summary) in every_command(&f) {
        assert_eq!(status, "warn", "{summary}");
        assert!(
            summary.contains("nconnect=8 asked (the helper's record of the mount)"),
            "{summary}"
        );
    }
}

/// `probe = true` in the policy runs the live registration probe for every command that judges
/// the node, doctor and provision included, as `--probe` does: one node, one verdict.
#[test]
fn the_policys_probe_runs_for_every_command_that_judges_the_node() {
    let f = ready_with_gds(20049);
    f.policy("probe = true\n");
    let registration = |args: &[&str]| {
        let (_, out, err) = run(&f, args);
        let doc = json(&out, &format!("{args:?}: {err}"));
        checks_of(&doc["checks"])
            .get("nvfs-registration")
            .map(|c| c.status.clone())
    };
    let check = registration(&["check", "--json"]);
    assert!(
        check.is_some(),
        "check does not run the probe the policy asks for"
    );
    assert_eq!(registration(&["doctor", "--json"]), check, "doctor");
    assert_eq!(
        registration(&["check", "--json", "--probe"]),
        check,
        "check --probe"
    );
    // Without the policy's word, the probe runs only when asked.
    f.policy("");
    assert_eq!(registration(&["doctor", "--json"]), None);
    assert_eq!(registration(&["doctor", "--json", "--probe"]), check);
}

/// A relative DIR names the same mount point for every command: in a tree it is relative to
/// the tree's `/` (the process's working directory is a path of the machine, not of the tree),
/// for the mount helper under both names as for `verify`.
#[test]
fn a_relative_dir_is_the_same_mount_point_for_every_command() {
    let f = ready_with_gds(20049);
    let (code, out, err) = run(&f, &["verify", "mnt/gds", "--json"]);
    assert_eq!(code, 0, "verify mnt/gds: {out}{err}");
    assert_eq!(json(&out, "verify")["subject"], "/mnt/gds", "{out}");
    f.write("mnt/new/.keep", "");
    let helper = f
        .helper()
        .args(["10.0.2.15:/other", "mnt/new", "-f"])
        .output()
        .unwrap();
    let (mount_code, mount_out, mount_err) =
        run(&f, &["mount", "10.0.2.15:/other", "mnt/new", "-f"]);
    for (who, code, out, err) in [
        (
            "mount.nfs-gds",
            helper.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&helper.stdout).into_owned(),
            String::from_utf8_lossy(&helper.stderr).into_owned(),
        ),
        ("nfs-gds mount", mount_code, mount_out, mount_err),
    ] {
        assert_eq!(code, 0, "{who} mnt/new -f: {out}{err}");
        assert!(
            out.contains(" on /mnt/new ") || out.contains(" /mnt/new"),
            "{who} did not plan /mnt/new of the tree: {out}{err}"
        );
    }
}
