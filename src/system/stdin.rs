//! The process's stdin on this machine ([`Call::StdinIsTerminal`](super::Call),
//! [`Call::ReadStdin`](super::Call)): whether it is a terminal, and one read that waits in
//! poll(2) for at most a given time, so that a writer who never closes it cannot hold nfs-gds.
//! In this thread: a reader thread would cost a scheduler round trip per read, tens of
//! milliseconds on a loaded node (the container hook reads its state this way at every
//! container start).

use std::io::IsTerminal;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use super::call::{StdinRead, STDIN_CHUNK};

pub fn is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// One read of stdin, waiting at most `wait` for something to come.
pub fn read(wait: Duration) -> Result<StdinRead, String> {
    read_fd(std::io::stdin().as_fd(), wait)
}

/// One read of `fd` (unbuffered: nothing is kept back that a later poll would not see),
/// waiting at most `wait`.
fn read_fd(fd: BorrowedFd<'_>, wait: Duration) -> Result<StdinRead, String> {
    use nix::poll::{poll, PollFd, PollFlags};
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        match poll(&mut fds, ms) {
            Ok(0) if left.is_zero() => return Ok(StdinRead::Waited),
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
        let mut buf = vec![0u8; STDIN_CHUNK];
        match rustix::io::read(fd, &mut buf) {
            Ok(0) => return Ok(StdinRead::End),
            Ok(n) => {
                buf.truncate(n);
                return Ok(StdinRead::Bytes(buf));
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(std::io::Error::from(e).to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_read_gives_what_came_then_waits_no_longer_than_asked_then_sees_the_end() {
        let (reader, writer) = std::io::pipe().unwrap();
        let mut writer = Some(writer);
        writer.as_mut().unwrap().write_all(b"{\"id\":").unwrap();
        assert_eq!(
            read_fd(reader.as_fd(), Duration::from_secs(5)),
            Ok(StdinRead::Bytes(b"{\"id\":".to_vec()))
        );
        // Nothing more, and the writer keeps it open: the wait ends it.
        let started = Instant::now();
        assert_eq!(
            read_fd(reader.as_fd(), Duration::from_millis(50)),
            Ok(StdinRead::Waited)
        );
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(50) && took < Duration::from_secs(5),
            "{took:?}"
        );
        drop(writer.take());
        assert_eq!(
            read_fd(reader.as_fd(), Duration::from_secs(5)),
            Ok(StdinRead::End)
        );
    }
}
