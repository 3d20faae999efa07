//! NRI's multiplexer (containerd/nri `pkg/net/multiplex`): every frame on the one stream is an
//! 8-byte header — `u32` big-endian connection id, `u32` big-endian payload length — then the
//! payload, a piece of that connection's byte stream. Connection 1 carries the plugin's service,
//! connection 2 the runtime's; frames for any other id are dropped, as NRI drops them.

use std::fmt;

/// The connection the runtime calls the plugin on.
pub const PLUGIN_CONN: u32 = 1;
/// The connection the plugin calls the runtime on.
pub const RUNTIME_CONN: u32 = 2;

/// Bytes of a frame header.
pub const HEADER_LEN: usize = 8;

/// The largest payload a frame may carry: one whole ttrpc message (NRI's `maxPayloadSize`).
pub const MAX_PAYLOAD: usize = super::ttrpc::HEADER_LEN + super::ttrpc::MAX_MESSAGE;

/// A frame whose length is more than [`MAX_PAYLOAD`]: the stream is not NRI's, or is broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLong {
    pub conn: u32,
    pub len: u32,
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NRI frame for connection {} says {} bytes, more than the {MAX_PAYLOAD} a frame may carry",
            self.conn, self.len
        )
    }
}

impl std::error::Error for TooLong {}

/// The frames for `payload` on connection `conn`: pieces of at most [`MAX_PAYLOAD`] bytes, each
/// with its header.
pub fn encode(conn: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + HEADER_LEN);
    let mut chunks = payload.chunks(MAX_PAYLOAD).peekable();
    if chunks.peek().is_none() {
        return out;
    }
    for chunk in chunks {
        out.extend_from_slice(&conn.to_be_bytes());
        out.extend_from_slice(&(chunk.len() as u32).to_be_bytes());
        out.extend_from_slice(chunk);
    }
    out
}

/// Splits the bytes read from the stream into frames, however the reads cut them.
#[derive(Debug, Default)]
pub struct Demux {
    buf: Vec<u8>,
    /// Frames dropped for a connection id other than 1 and 2.
    pub dropped: u64,
}

impl Demux {
    /// Takes the bytes of one read.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame for connection 1 or 2 (`(conn, payload)`), `None` until one has
    /// arrived whole; an oversized length is an error (nothing after it can be trusted).
    pub fn next_frame(&mut self) -> Result<Option<(u32, Vec<u8>)>, TooLong> {
        loop {
            if self.buf.len() < HEADER_LEN {
                return Ok(None);
            }
            let conn = u32::from_be_bytes(self.buf[0..4].try_into().expect("4 bytes"));
            let len = u32::from_be_bytes(self.buf[4..8].try_into().expect("4 bytes"));
            if len as usize > MAX_PAYLOAD {
                return Err(TooLong { conn, len });
            }
            let end = HEADER_LEN + len as usize;
            if self.buf.len() < end {
                return Ok(None);
            }
            let payload = self.buf[HEADER_LEN..end].to_vec();
            self.buf.drain(..end);
            if conn == PLUGIN_CONN || conn == RUNTIME_CONN {
                return Ok(Some((conn, payload)));
            }
            self.dropped += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_its_connection_and_length_big_endian_then_the_payload() {
        assert_eq!(
            encode(RUNTIME_CONN, b"abc"),
            [0, 0, 0, 2, 0, 0, 0, 3, b'a', b'b', b'c']
        );
    }

    #[test]
    fn a_frame_split_across_reads_comes_out_whole_once_all_has_arrived() {
        let mut bytes = encode(PLUGIN_CONN, b"hello");
        bytes.extend(encode(RUNTIME_CONN, b"world"));
        let mut d = Demux::default();
        let mut got = Vec::new();
        // One byte per read: the worst cut there is.
        for b in &bytes {
            d.push(std::slice::from_ref(b));
            while let Some(f) = d.next_frame().unwrap() {
                got.push(f);
            }
        }
        assert_eq!(
            got,
            [(1, b"hello".to_vec()), (2, b"world".to_vec())],
            "frames: {got:?}"
        );
    }

    #[test]
    fn an_oversized_length_is_refused_before_its_payload_is_awaited() {
        let mut d = Demux::default();
        let mut header = PLUGIN_CONN.to_be_bytes().to_vec();
        header.extend(((MAX_PAYLOAD + 1) as u32).to_be_bytes());
        d.push(&header);
        let err = d.next_frame().unwrap_err();
        assert_eq!(
            err,
            TooLong {
                conn: 1,
                len: (MAX_PAYLOAD + 1) as u32
            }
        );
        // The largest allowed length is awaited, not refused.
        let mut d = Demux::default();
        let mut header = PLUGIN_CONN.to_be_bytes().to_vec();
        header.extend((MAX_PAYLOAD as u32).to_be_bytes());
        d.push(&header);
        assert_eq!(d.next_frame(), Ok(None));
    }

    #[test]
    fn a_frame_for_an_unknown_connection_is_dropped_and_the_next_one_delivered() {
        let mut bytes = encode(7, b"stray");
        bytes.extend(encode(0, b"reserved"));
        bytes.extend(encode(PLUGIN_CONN, b"call"));
        let mut d = Demux::default();
        d.push(&bytes);
        assert_eq!(d.next_frame(), Ok(Some((1, b"call".to_vec()))));
        assert_eq!(d.dropped, 2);
        assert_eq!(d.next_frame(), Ok(None));
    }

    #[test]
    fn a_payload_longer_than_a_frame_goes_out_in_several() {
        let payload = vec![7u8; MAX_PAYLOAD + 5];
        let bytes = encode(PLUGIN_CONN, &payload);
        let mut d = Demux::default();
        d.push(&bytes);
        let (_, first) = d.next_frame().unwrap().unwrap();
        let (_, second) = d.next_frame().unwrap().unwrap();
        assert_eq!((first.len(), second.len()), (MAX_PAYLOAD, 5));
    }
}
