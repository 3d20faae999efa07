//! How a process that runs for weeks (the NRI plugin, the agent's loop) keeps what small
//! allocations leave behind from adding up.
//!
//! glibc gives heap memory back to the kernel only from the heap's top: pages freed below an
//! allocation still held stay resident. So after a mount table was replaced, at most once per
//! [`TRIM_EVERY`], the free pages anywhere in the heap go back (`malloc_trim`). This bounds the
//! leftovers; it does not keep large buffers in place. In the plugin's hour-long benchmark, the
//! trim alone still let the resident size step up 2 MiB at minute 18. What made it flat is
//! reading each new table into the last one's storage (`read_mountinfo_text_into`).
//! A fixed `M_MMAP_THRESHOLD` (every block of 128 KiB or more mapped for itself) was measured
//! and not taken: 50% more CPU per answer, 4 MB of fresh pages faulted in each time.
//! Another C library is left as it is.

use std::time::Duration;

/// The least time between two trims.
pub const TRIM_EVERY: Duration = Duration::from_secs(60);

/// Gives the heap's free pages back when the last trim is at least [`TRIM_EVERY`] before
/// `now` (a monotonic clock): call after dropping a large structure.
#[derive(Debug, Default)]
pub struct Trim {
    last: Option<Duration>,
}

impl Trim {
    /// Whether a trim is due at `now`; when it is, the trim is recorded as done at `now`.
    pub fn due(&mut self, now: Duration) -> bool {
        let due = self
            .last
            .is_none_or(|at| now.saturating_sub(at) >= TRIM_EVERY);
        if due {
            self.last = Some(now);
        }
        due
    }

    /// Trims when due at `now`.
    pub fn maybe(&mut self, now: Duration) {
        if self.due(now) {
            give_back_free_pages();
        }
    }
}

/// Whether any memory went back (never, outside glibc).
#[allow(unsafe_code)]
fn give_back_free_pages() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim walks the allocator's own free lists under its lock and advises the
    // kernel of whole free pages; it touches no memory the program holds.
    unsafe {
        nix::libc::malloc_trim(0) == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trim_is_due_at_first_then_once_per_minute() {
        let mut t = Trim::default();
        let s = Duration::from_secs;
        assert!(t.due(s(100)));
        assert!(!t.due(s(100)));
        assert!(!t.due(s(159)));
        assert!(t.due(s(160)));
        assert!(!t.due(s(200)));
        assert!(t.due(s(220)));
    }

    /// Free pages in the middle of the heap — between allocations still held, where the heap
    /// cannot shrink from its top — go back.
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn free_pages_between_held_allocations_go_back() {
        // Blocks under the mmap threshold, each followed by a small one that stays.
        let (blocks, held): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (0..256)
            .map(|_| (vec![1u8; 16 * 1024], vec![2u8; 64]))
            .unzip();
        drop(blocks);
        assert!(give_back_free_pages(), "4 MiB of free heap pages");
        assert!(held.iter().all(|h| h[63] == 2));
    }
}
