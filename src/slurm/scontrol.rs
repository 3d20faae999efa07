//! What nfs-gds asks of slurmctld, as `scontrol` argument vectors (run without a shell, so a
//! reason with spaces needs no quoting), and how it reads the one answer it asks for:
//! `scontrol show node NAME`'s state and reason.

use std::time::Duration;

use super::reason::DrainReason;

/// The program, found in the search list.
pub const PROGRAM: &str = "scontrol";

/// The longest one `scontrol` may take: slurmctld answers in milliseconds, or is not there.
pub const LIMIT: Duration = Duration::from_secs(10);

/// Whether `name` can be a node name in `NodeName=NAME`: not empty, at most 255 bytes, no
/// whitespace, control character, `=` or quote, which would make it another argument's text.
pub fn check_node_name(name: &str) -> Result<(), String> {
    let bad = |c: char| c.is_whitespace() || c.is_control() || matches!(c, '=' | '"' | '\'');
    if name.is_empty() || name.len() > 255 || name.contains(bad) {
        Err(format!(
            "{:?} is not a Slurm node name (1 to 255 bytes, no spaces, `=` or quotes)",
            crate::escape::escape_control(name)
        ))
    } else {
        Ok(())
    }
}

pub fn show_node(node: &str) -> Vec<String> {
    vec!["show".into(), "node".into(), node.into()]
}

pub fn drain(node: &str, reason: &DrainReason) -> Vec<String> {
    vec![
        "update".into(),
        format!("NodeName={node}"),
        "State=DRAIN".into(),
        format!("Reason={reason}"),
    ]
}

pub fn resume(node: &str) -> Vec<String> {
    vec![
        "update".into(),
        format!("NodeName={node}"),
        "State=RESUME".into(),
    ]
}

/// A node as `scontrol show node` shows it: its state (`IDLE+DRAIN`, `DOWN*`, `MIXED`) and its
/// reason, without the `[user@time]` slurmctld appends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    pub state: String,
    pub reason: Option<String>,
}

impl NodeState {
    /// Drained, draining, down or failed: taking no new jobs, with a reason someone gave.
    pub fn is_held(&self) -> bool {
        self.state
            .split(['+', '*', '~', '#', '!', '%', '$', '@', '^'])
            .any(|flag| {
                matches!(
                    flag,
                    "DRAIN" | "DRAINING" | "DRAINED" | "DOWN" | "FAIL" | "FAILING"
                )
            })
    }

    /// Whether its reason is one nfs-gds gave.
    pub fn reason_is_ours(&self) -> bool {
        self.reason.as_deref().is_some_and(super::reason::is_ours)
    }
}

/// The state and reason of `node` in `scontrol show node NODE`'s output; an error when the
/// output shows no such node.
pub fn parse_show_node(text: &str, node: &str) -> Result<NodeState, String> {
    let named = text
        .split_whitespace()
        .any(|w| w == format!("NodeName={node}"));
    if !named {
        return Err(format!(
            "`scontrol show node {node}` did not show NodeName={node}"
        ));
    }
    let state = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("State="))
        .ok_or_else(|| format!("`scontrol show node {node}` showed no State="))?
        .to_string();
    // `Reason=` runs to the end of its line (it may hold spaces), ending in `[user@time]`.
    let reason = text.lines().find_map(|l| {
        let r = l.trim_start().strip_prefix("Reason=")?;
        let r = match r.rfind(" [") {
            Some(i) if r.trim_end().ends_with(']') => &r[..i],
            _ => r,
        };
        Some(r.trim().to_string()).filter(|r| !r.is_empty() && r != "(null)")
    });
    Ok(NodeState { state, reason })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `scontrol show node` of Slurm 22.05, drained by nfs-gds.
    pub const DRAINED_BY_US: &str = "\
NodeName=gpu01 Arch=x86_64 CoresPerSocket=1 
   CPUAlloc=0 CPUTot=2 CPULoad=0.01
   AvailableFeatures=gds_nfs
   ActiveFeatures=gds_nfs
   Gres=(null)
   NodeAddr=gpu01 NodeHostName=gpu01 Version=22.05.8
   OS=Linux 6.1.0-27-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.115-1 (2024-11-01) 
   RealMemory=1 AllocMem=0 FreeMem=1500 Sockets=2 Boards=1
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=debug 
   BootTime=2026-12-07T00:01:02 SlurmdStartTime=2026-12-07T00:02:03
   LastBusyTime=2026-12-07T00:02:03
   CfgTRES=cpu=2,mem=1M,billing=2
   AllocTRES=
   CapWatts=n/a
   CurrentWatts=0 AveWatts=0
   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s
   Reason=nfs-gds: rpcrdma-hooks rpcrdma [root@2026-12-07T00:03:04]
";

    pub fn show(state: &str, reason: Option<&str>) -> String {
        let mut text = DRAINED_BY_US
            .replace("State=IDLE+DRAIN", &format!("State={state}"))
            .lines()
            .filter(|l| !l.trim_start().starts_with("Reason="))
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(r) = reason {
            text.push_str(&format!("\n   Reason={r} [admin@2026-12-07T00:05:06]"));
        }
        text + "\n"
    }

    #[test]
    fn the_state_and_the_reason_without_who_and_when_are_read() {
        let n = parse_show_node(DRAINED_BY_US, "gpu01").unwrap();
        assert_eq!(n.state, "IDLE+DRAIN");
        assert_eq!(n.reason.as_deref(), Some("nfs-gds: rpcrdma-hooks rpcrdma"));
        assert!(n.is_held() && n.reason_is_ours());
        let n = parse_show_node(&show("MIXED", None), "gpu01").unwrap();
        assert_eq!(n.reason, None);
        assert!(!n.is_held() && !n.reason_is_ours());
        let n = parse_show_node(&show("DOWN*", Some("bad DIMM [ticket 7]")), "gpu01").unwrap();
        assert_eq!(n.reason.as_deref(), Some("bad DIMM [ticket 7]"));
        assert!(n.is_held() && !n.reason_is_ours());
        // AvailableFeatures= and the like are not State=.
        assert_eq!(
            parse_show_node(&show("ALLOCATED+DRAIN", Some("x")), "gpu01")
                .unwrap()
                .state,
            "ALLOCATED+DRAIN"
        );
    }

    #[test]
    fn another_nodes_answer_or_no_state_is_an_error() {
        assert!(parse_show_node(DRAINED_BY_US, "gpu02").is_err());
        assert!(parse_show_node("Node gpu01 not found\n", "gpu01").is_err());
        assert!(parse_show_node("NodeName=gpu01 Arch=x86_64\n", "gpu01").is_err());
    }

    #[test]
    fn arguments_are_one_word_each_reason_included() {
        let reason = DrainReason::new(crate::checks::catalogue::transport_trap::ID, "/mnt/gds");
        assert_eq!(
            drain("gpu01", &reason),
            [
                "update",
                "NodeName=gpu01",
                "State=DRAIN",
                "Reason=nfs-gds: transport-trap /mnt/gds"
            ]
        );
        assert_eq!(
            resume("gpu01"),
            ["update", "NodeName=gpu01", "State=RESUME"]
        );
    }

    #[test]
    fn a_node_name_that_would_be_another_argument_is_refused() {
        assert!(check_node_name("gpu01").is_ok());
        assert!(check_node_name("dgx-a100-017.cluster").is_ok());
        for bad in [
            "",
            "gpu01 State=RESUME",
            "a=b",
            "x\ny",
            "q\"",
            &"n".repeat(256),
        ] {
            assert!(check_node_name(bad).is_err(), "{bad:?}");
        }
    }
}
