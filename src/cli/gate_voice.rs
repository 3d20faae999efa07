//! What a container gate says, where people read it: each line on stderr (runtimes may drop
//! it) and in the system log, and the counters the agent exports. `oci-hook` and `nri` both say
//! their answers, the annotation problems and the unresolved links here, so the two gates speak
//! with one voice.

use crate::agent::hook_counts;
use crate::escape::escape_control;
use crate::host::syslog::{self, Severity};
use crate::host::Root;
use crate::judge::container::Said;
use crate::oci;

/// One line on stderr and, when `to_log`, in the system log. A closed stderr or a missing log
/// never changes the gate's answer.
fn say(root: &Root, severity: Severity, line: &str, to_log: bool) {
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("nfs-gds: {line}\n").as_bytes(),
    );
    if !to_log {
        return;
    }
    if let Err(e) = syslog::log(root, severity, line) {
        tracing::debug!("no system log: {e}");
    }
}

/// Says each annotation problem and counts it: a misspelt key or path would otherwise switch
/// the gate off silently.
pub fn say_problems(root: &Root, who: &str, problems: &[oci::AnnotationProblem]) {
    if problems.is_empty() {
        return;
    }
    for p in problems {
        let taken = match p {
            oci::AnnotationProblem::BadValue { .. } => ", so the container is taken as marked",
            _ => "",
        };
        let line = escape_control(&format!("warning: {who}: {p}{taken}")).into_owned();
        say(root, Severity::Warning, &line, true);
    }
    let kinds: Vec<&str> = problems.iter().map(|p| p.kind()).collect();
    if let Err(e) = hook_counts::add_problems(root, &kinds) {
        tracing::debug!("cannot count the annotation problems: {e}");
    }
}

/// Says each bind source whose resolution stopped inside an NFS mount after a link: the only
/// case in which the gate warns about a link.
pub fn say_unresolved(root: &Root, who: &str, unresolved: &[String]) {
    for u in unresolved {
        let line = escape_control(&format!("warning: {who}: {u}")).into_owned();
        say(root, Severity::Warning, &line, true);
    }
}

/// Says the judge's lines (to the system log where `log_line` allows it) and counts the answer,
/// every time: the counters count each answer.
pub fn tell(root: &Root, said: &Said, mut log_line: impl FnMut(&str) -> bool) {
    for (severity, line) in &said.lines {
        say(root, *severity, line, log_line(line));
    }
    let (refusals, warnings) = if said.refused { (1, 0) } else { (0, 1) };
    if let Err(e) = hook_counts::add(root, refusals, warnings) {
        // The line above is the answer; the system log has it even when it cannot be counted.
        tracing::debug!("cannot count the answer: {e}");
    }
}
