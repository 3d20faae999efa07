//! What the helper says: one escaped line per diagnostic, a judgement's lines naming DIR where
//! a mount is staged, the proof of a mount under `-v`, warnings that did not refuse, and what a
//! sweep took back.

use super::*;

/// One diagnostic line. What it quotes (a SPEC, a path, a line of a file) may hold a newline or
/// a terminal escape; those are escaped so that nothing can forge a line of its own.
pub(super) fn write_line(w: &mut dyn Write, line: &str) {
    let _ = writeln!(w, "{PREFIX}{}", escape_control(line));
}

impl Helper<'_> {
    pub(super) fn say(&mut self, line: &str) {
        write_line(self.err, line);
    }

    pub(super) fn subject(req: &MountRequest) -> String {
        format!("{} on {}", req.spec, req.target.display())
    }

    /// The lines of a judgement; a staged mount's checks name DIR, where the admin asked for
    /// the mount, not the staging point.
    pub(super) fn print_judgement_lines(&mut self, j: &Judgement) {
        for line in journal_lines(j) {
            match &self.shown_as {
                Some((staged, target)) if line.contains(staged.as_str()) => {
                    write_line(self.err, &line.replace(staged.as_str(), target))
                }
                _ => write_line(self.err, &line),
            }
        }
    }

    /// Says what a sweep of the staging area took back from helpers that died.
    pub(super) fn report_swept(&mut self, swept: &[Swept]) {
        for s in swept {
            self.say(&format!(
                "cleaned up after an nfs-gds helper that did not finish: {s}"
            ));
        }
    }

    pub(super) fn proof(m: &Mount) -> String {
        format!(
            "{} over {}, proto={}, port={}",
            if m.transports().len() == 1 {
                "runs".to_string()
            } else {
                format!("all {} transports run", m.transports().len())
            },
            m.transports().join("+"),
            m.option("proto").unwrap_or("?"),
            m.port()
                .map_or_else(|| "unknown (rpcbind)".to_string(), |p| p.to_string())
        )
    }

    /// Prints the warnings of a judgement that did not refuse.
    pub(super) fn warn_if_needed(&mut self, req: &MountRequest, j: &Judgement, doing: &str) {
        if j.warnings.is_empty() {
            return;
        }
        let failed = j.failed_warnings();
        if failed > 0 {
            self.say(&format!(
                "WARNING: {doing} {} although {} failed (policy warn): GPU I/O may silently go through bounce buffers",
                Self::subject(req),
                plural(failed, "check")
            ));
        }
        self.print_judgement_lines(j);
    }
}
