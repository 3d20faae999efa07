//! ttrpc, containerd's small RPC protocol, as each NRI connection speaks it: a 10-byte header —
//! `u32` big-endian payload length, `u32` big-endian stream id, `u8` type (1 request,
//! 2 response), `u8` flags — then the payload, a protobuf `ttrpc.Request{service, method,
//! payload, timeout_nano, metadata}` or `ttrpc.Response{status, payload}`. A caller numbers its
//! streams with odd ids from 1; the answer carries the request's id. Unary calls only: NRI uses
//! no ttrpc streaming; a message of another type is skipped.

use std::fmt;

use prost::Message as _;

/// Bytes of a message header.
pub const HEADER_LEN: usize = 10;
/// The largest message payload ttrpc accepts (4 MiB).
pub const MAX_MESSAGE: usize = 4 << 20;

/// A request message.
pub const TYPE_REQUEST: u8 = 1;
/// A response message.
pub const TYPE_RESPONSE: u8 = 2;

/// gRPC status codes the plugin answers with.
pub mod code {
    /// A refusal: what NRI's Go plugins return for an ordinary error.
    pub const UNKNOWN: i32 = 2;
    /// A method the plugin does not serve.
    pub const UNIMPLEMENTED: i32 = 12;
    /// A request that could not be decoded.
    pub const INVALID_ARGUMENT: i32 = 3;
}

/// `ttrpc.Request`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Request {
    #[prost(string, tag = "1")]
    pub service: String,
    #[prost(string, tag = "2")]
    pub method: String,
    #[prost(bytes = "vec", tag = "3")]
    pub payload: Vec<u8>,
    #[prost(int64, tag = "4")]
    pub timeout_nano: i64,
    #[prost(message, repeated, tag = "5")]
    pub metadata: Vec<KeyValue>,
}

/// `ttrpc.KeyValue`, a request's metadata.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `ttrpc.Response`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Response {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(bytes = "vec", tag = "2")]
    pub payload: Vec<u8>,
}

/// `google.rpc.Status` (its `details` are skipped).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

/// One ttrpc message, header decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub stream: u32,
    pub kind: u8,
    pub flags: u8,
    pub payload: Vec<u8>,
}

/// A message header whose length is more than [`MAX_MESSAGE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLong {
    pub stream: u32,
    pub len: u32,
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ttrpc message on stream {} says {} bytes, more than the {MAX_MESSAGE} ttrpc accepts",
            self.stream, self.len
        )
    }
}

impl std::error::Error for TooLong {}

/// The bytes of one message.
pub fn encode(stream: u32, kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&stream.to_be_bytes());
    out.push(kind);
    out.push(0);
    out.extend_from_slice(payload);
    out
}

/// A request message calling `service`/`method` with `payload`.
pub fn request(stream: u32, service: &str, method: &str, payload: Vec<u8>) -> Vec<u8> {
    let req = Request {
        service: service.to_string(),
        method: method.to_string(),
        payload,
        timeout_nano: 0,
        metadata: Vec::new(),
    };
    encode(stream, TYPE_REQUEST, &req.encode_to_vec())
}

/// A response message: `Ok(payload)`, or a status with `code` and `message`.
pub fn response(stream: u32, answer: Result<Vec<u8>, (i32, String)>) -> Vec<u8> {
    let resp = match answer {
        Ok(payload) => Response {
            status: None,
            payload,
        },
        Err((code, message)) => Response {
            status: Some(Status { code, message }),
            payload: Vec::new(),
        },
    };
    encode(stream, TYPE_RESPONSE, &resp.encode_to_vec())
}

/// Splits one connection's byte stream into messages, however the frames cut it.
#[derive(Debug, Default)]
pub struct Stream {
    buf: Vec<u8>,
}

impl Stream {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole message, `None` until one has arrived whole.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, TooLong> {
        if self.buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let len = u32::from_be_bytes(self.buf[0..4].try_into().expect("4 bytes"));
        let stream = u32::from_be_bytes(self.buf[4..8].try_into().expect("4 bytes"));
        if len as usize > MAX_MESSAGE {
            return Err(TooLong { stream, len });
        }
        let end = HEADER_LEN + len as usize;
        if self.buf.len() < end {
            return Ok(None);
        }
        let frame = Frame {
            stream,
            kind: self.buf[8],
            flags: self.buf[9],
            payload: self.buf[HEADER_LEN..end].to_vec(),
        };
        self.buf.drain(..end);
        Ok(Some(frame))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_header_is_length_stream_type_flags() {
        assert_eq!(
            encode(3, TYPE_RESPONSE, b"xy"),
            [0, 0, 0, 2, 0, 0, 0, 3, 2, 0, b'x', b'y']
        );
    }

    #[test]
    fn a_request_split_across_frames_decodes_whole() {
        let bytes = request(
            1,
            "nri.pkg.api.v1alpha1.Runtime",
            "RegisterPlugin",
            vec![1, 2],
        );
        let mut s = Stream::default();
        let (a, b) = bytes.split_at(7);
        s.push(a);
        assert_eq!(s.next_frame(), Ok(None));
        s.push(b);
        let f = s.next_frame().unwrap().unwrap();
        assert_eq!((f.stream, f.kind), (1, TYPE_REQUEST));
        let req = Request::decode(f.payload.as_slice()).unwrap();
        assert_eq!(req.service, "nri.pkg.api.v1alpha1.Runtime");
        assert_eq!(req.method, "RegisterPlugin");
        assert_eq!(req.payload, [1, 2]);
        assert_eq!(s.next_frame(), Ok(None));
    }

    #[test]
    fn an_oversized_message_is_refused() {
        let mut s = Stream::default();
        let mut header = ((MAX_MESSAGE + 1) as u32).to_be_bytes().to_vec();
        header.extend(5u32.to_be_bytes());
        header.extend([TYPE_REQUEST, 0]);
        s.push(&header);
        assert_eq!(
            s.next_frame(),
            Err(TooLong {
                stream: 5,
                len: (MAX_MESSAGE + 1) as u32
            })
        );
    }

    #[test]
    fn an_error_response_carries_code_and_message() {
        let bytes = response(9, Err((code::UNKNOWN, "refused".into())));
        let mut s = Stream::default();
        s.push(&bytes);
        let f = s.next_frame().unwrap().unwrap();
        let resp = Response::decode(f.payload.as_slice()).unwrap();
        assert_eq!(
            resp.status,
            Some(Status {
                code: code::UNKNOWN,
                message: "refused".into()
            })
        );
    }
}
