//! A host file read line by line, never whole: for the files that grow with the machine, such
//! as `mountstats`, which some 80 lines of per-operation counters per NFS mount make tens of
//! megabytes on a node with thousands of PV mounts.
//!
//! The file is opened with every rule of [`crate::host::io::reader`] (resolved inside the root, a regular
//! file, recorded for `collect`); its bytes then pass through one buffer that is reused, and
//! lines are found with `memchr`. The cap of the file's [`FileKind`] still holds, counted over
//! the bytes streamed: a file that never ends (or is far larger than any of its kind) is an
//! error naming it, not a hang, and memory stays at the buffer and the longest line, which is
//! capped too ([`FileKind::line_cap`]).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::error::HostError;
use super::reader::FileKind;

/// The buffer's first size; a longer line grows it (up to the file's cap).
const CHUNK: usize = 64 * 1024;

/// The lines of one open file, each without its `\n`. [`Lines::next_line`] lends each line
/// until the next call.
#[derive(Debug)]
pub struct Lines {
    file: File,
    path: PathBuf,
    kind: FileKind,
    buf: Vec<u8>,
    /// The unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Bytes read from the file so far, against the cap.
    read: u64,
    eof: bool,
    /// The 1-based number of the line last returned.
    number: usize,
}

impl Lines {
    /// Lines of `file` (already checked), named `path` in errors and capped as `kind`.
    pub(crate) fn new(file: File, path: &Path, kind: FileKind) -> Self {
        Lines {
            file,
            path: path.to_owned(),
            kind,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            read: 0,
            eof: false,
            number: 0,
        }
    }

    /// The file as its errors name it (with the root).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The 1-based number of the line last returned by [`Lines::next_line`].
    pub fn number(&self) -> usize {
        self.number
    }

    /// The next line without its `\n` (a last line without one is a line too), or `None` at the
    /// end of the file.
    pub fn next_line(&mut self) -> Result<Option<&[u8]>, HostError> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                let line = self.start..self.start + i;
                self.start += i + 1;
                self.number += 1;
                return Ok(Some(&self.buf[line]));
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let line = self.start..self.end;
                self.start = self.end;
                self.number += 1;
                return Ok(Some(&self.buf[line]));
            }
            self.fill()?;
        }
    }

    /// The next run of whole lines, as much as the buffer holds, each ended by its `\n` (the
    /// file's last line maybe not); `None` at the end of the file. For a reader that finds its
    /// lines itself, faster than line by line; [`Lines::number`] counts them (so an error names
    /// the right line).
    pub fn next_lines(&mut self) -> Result<Option<&[u8]>, HostError> {
        loop {
            if let Some(i) = memchr::memrchr(b'\n', &self.buf[self.start..self.end]) {
                let lines = self.start..self.start + i + 1;
                self.start += i + 1;
                self.number += memchr::memchr_iter(b'\n', &self.buf[lines.clone()]).count();
                return Ok(Some(&self.buf[lines]));
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let lines = self.start..self.end;
                self.start = self.end;
                self.number += 1;
                return Ok(Some(&self.buf[lines]));
            }
            self.fill()?;
        }
    }

    /// Moves the partial line to the front of the buffer and reads more after it.
    fn fill(&mut self) -> Result<(), HostError> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            // One line longer than the buffer: room for it, up to the line cap (or the
            // file's cap, below).
            let mut grown = self.buf.len() * 2;
            if let Some(cap) = self.kind.line_cap() {
                if self.buf.len() as u64 >= cap {
                    return Err(HostError::LineTooLong {
                        path: self.path.clone(),
                        line: self.number + 1,
                        cap,
                        noun: self.kind.noun(),
                    });
                }
                grown = grown.min(cap as usize);
            }
            self.buf.resize(grown, 0);
        }
        let n = loop {
            match self.file.read(&mut self.buf[self.end..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(HostError::Read {
                        path: self.path.clone(),
                        source,
                    })
                }
            }
        };
        if n == 0 {
            self.eof = true;
            return Ok(());
        }
        self.end += n;
        self.read += n as u64;
        if self.read > self.kind.cap() {
            return Err(HostError::TooLarge {
                path: self.path.clone(),
                cap: self.kind.cap(),
                noun: self.kind.noun(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(bytes: &[u8], chunk: usize) -> Vec<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, bytes).unwrap();
        let mut l = Lines::new(File::open(&p).unwrap(), &p, FileKind::Text);
        l.buf = vec![0; chunk];
        let mut out = Vec::new();
        while let Some(line) = l.next_line().unwrap() {
            out.push(line.to_vec());
            assert_eq!(l.number(), out.len());
        }
        out
    }

    #[test]
    fn lines_are_the_split_of_the_whole_file_whatever_the_buffer() {
        let text: &[u8] = b"one\n\ntwo three\nlonger than the buffer by far\nlast";
        let whole: Vec<Vec<u8>> = text.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
        for chunk in [1, 2, 3, 7, 64, CHUNK] {
            assert_eq!(lines_of(text, chunk), whole, "chunk {chunk}");
        }
        // A final newline ends the last line; it does not start an empty one.
        assert_eq!(lines_of(b"a\nb\n", 2), [b"a".to_vec(), b"b".to_vec()]);
        assert!(lines_of(b"", 4).is_empty());
    }

    #[test]
    fn runs_of_lines_are_the_whole_file_cut_at_line_ends() {
        let text: &[u8] = b"one\n\ntwo three\nlonger than the buffer by far\nlast";
        for chunk in [1, 2, 3, 7, 64, CHUNK] {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("f");
            std::fs::write(&p, text).unwrap();
            let mut l = Lines::new(File::open(&p).unwrap(), &p, FileKind::Text);
            l.buf = vec![0; chunk];
            let mut runs = Vec::new();
            while let Some(run) = l.next_lines().unwrap() {
                runs.push(run.to_vec());
            }
            assert_eq!(runs.concat(), text, "chunk {chunk}");
            let (last, whole) = runs.split_last().unwrap();
            assert!(whole.iter().all(|r| r.ends_with(b"\n")), "chunk {chunk}");
            assert_eq!(last.as_slice(), b"last");
        }
    }

    #[test]
    fn the_cap_counts_the_bytes_streamed_and_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("policy.toml");
        let f = File::create(&p).unwrap();
        f.set_len(FileKind::Policy.cap() + 1).unwrap();
        let mut l = Lines::new(File::open(&p).unwrap(), &p, FileKind::Policy);
        let e = loop {
            match l.next_line() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("read past the cap"),
                Err(e) => break e.to_string(),
            }
        };
        assert!(e.contains("policy.toml"), "{e}");
        assert!(e.contains("larger than 1 MiB"), "{e}");
    }

    #[test]
    fn a_mount_table_line_past_the_line_cap_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mountstats");
        let cap = FileKind::MountTable.line_cap().unwrap() as usize;
        let mut text = b"device a mounted on /m\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', cap + 1));
        std::fs::write(&p, &text).unwrap();
        let mut l = Lines::new(File::open(&p).unwrap(), &p, FileKind::MountTable);
        assert_eq!(l.next_line().unwrap(), Some(&b"device a mounted on /m"[..]));
        let e = l.next_line().unwrap_err().to_string();
        assert!(
            e.contains("mountstats:2: the line is longer than 1048576 bytes"),
            "{e}"
        );
        // Read by runs of lines, the line is named alike.
        let mut l = Lines::new(File::open(&p).unwrap(), &p, FileKind::MountTable);
        let e = loop {
            match l.next_lines() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("read past the line cap"),
                Err(e) => break e.to_string(),
            }
        };
        assert!(e.contains("mountstats:2: the line is longer"), "{e}");
        // The cap of the whole table is far past what 100,000 mounts write.
        assert!(FileKind::MountTable.cap() > 3 * 330_000_000);
    }
}
