//! The plugin's side of one NRI connection: it registers (`RegisterPlugin` with its name and
//! index, on the runtime's connection), then answers the runtime's calls one at a time —
//! `Configure` with a subscription to `CreateContainer` alone, `Synchronize` with no updates,
//! `CreateContainer` with no adjustment or with the [`Handler`]'s refusal, `Shutdown` by ending —
//! until the runtime closes the stream. Requests for events it did not subscribe to are answered
//! empty; methods it does not know, "unimplemented".

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use prost::Message as _;

use super::api::{self, CreateContainerRequest};
use super::mux::{self, Demux, PLUGIN_CONN, RUNTIME_CONN};
use super::ttrpc::{self, code};

/// The stream id of the plugin's one call, `RegisterPlugin`.
const REGISTER_STREAM: u32 = 1;

/// What the plugin does with each container.
pub trait Handler {
    /// `Ok`: let it be created, unchanged; `Err(message)`: refuse it, with `message` as the
    /// error the runtime returns to its caller.
    fn create_container(&mut self, request: &CreateContainerRequest) -> Result<(), String>;
    /// The runtime answered `RegisterPlugin` with success.
    fn registered(&mut self) {}
}

/// A stream the plugin talks over: a Unix socket, or its test stand-in.
pub trait Conn: Read + Write {
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
}

impl Conn for std::os::unix::net::UnixStream {
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        std::os::unix::net::UnixStream::set_read_timeout(self, timeout)
    }
}

/// How a connection ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The runtime called `Shutdown`.
    Shutdown,
    /// The runtime closed the stream.
    Closed,
}

/// How a connection ended badly.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("NRI connection: {0}")]
    Io(#[from] io::Error),
    #[error("NRI connection: {0}")]
    Protocol(String),
    #[error("the runtime did not answer the registration within {} s", .0.as_secs())]
    RegisterTimeout(Duration),
    #[error("the runtime refused the registration: {0}")]
    Refused(String),
}

/// Who the plugin says it is.
#[derive(Debug, Clone)]
pub struct Identity {
    pub name: String,
    pub idx: String,
}

/// Registers on `conn` and serves it until it ends: the registration must be answered within
/// `register_within`.
pub fn serve(
    conn: &mut impl Conn,
    me: &Identity,
    register_within: Duration,
    handler: &mut impl Handler,
) -> Result<End, PluginError> {
    let register = api::RegisterPluginRequest {
        plugin_name: me.name.clone(),
        plugin_idx: me.idx.clone(),
    };
    let call = ttrpc::request(
        REGISTER_STREAM,
        api::RUNTIME_SERVICE,
        "RegisterPlugin",
        register.encode_to_vec(),
    );
    conn.write_all(&mux::encode(RUNTIME_CONN, &call))?;
    let deadline = Instant::now() + register_within;
    let mut registered = false;
    conn.set_read_timeout(Some(register_within))?;
    let mut demux = Demux::default();
    let mut calls = ttrpc::Stream::default();
    let mut answers = ttrpc::Stream::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match conn.read(&mut buf) {
            Ok(0) => return Ok(End::Closed),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if !registered
                    && matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
            {
                return Err(PluginError::RegisterTimeout(register_within));
            }
            Err(e) => return Err(e.into()),
        };
        demux.push(&buf[..n]);
        while let Some((id, payload)) = demux
            .next_frame()
            .map_err(|e| PluginError::Protocol(e.to_string()))?
        {
            if id == PLUGIN_CONN {
                calls.push(&payload);
            } else {
                answers.push(&payload);
            }
        }
        while let Some(f) = answers
            .next_frame()
            .map_err(|e| PluginError::Protocol(e.to_string()))?
        {
            if f.kind != ttrpc::TYPE_RESPONSE || f.stream != REGISTER_STREAM {
                continue;
            }
            let resp = ttrpc::Response::decode(f.payload.as_slice())
                .map_err(|e| PluginError::Protocol(format!("registration answer: {e}")))?;
            if let Some(status) = resp.status.filter(|s| s.code != 0) {
                return Err(PluginError::Refused(status.message));
            }
            registered = true;
            conn.set_read_timeout(None)?;
            handler.registered();
        }
        if !registered {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(PluginError::RegisterTimeout(register_within));
            }
            conn.set_read_timeout(Some(left))?;
        }
        while let Some(f) = calls
            .next_frame()
            .map_err(|e| PluginError::Protocol(e.to_string()))?
        {
            if f.kind != ttrpc::TYPE_REQUEST {
                continue;
            }
            let (answer, end) = match ttrpc::Request::decode(f.payload.as_slice()) {
                Ok(req) => answer(&req, handler),
                Err(e) => (
                    Err((code::INVALID_ARGUMENT, format!("undecodable request: {e}"))),
                    false,
                ),
            };
            let bytes = ttrpc::response(f.stream, answer);
            conn.write_all(&mux::encode(PLUGIN_CONN, &bytes))?;
            if end {
                return Ok(End::Shutdown);
            }
        }
    }
}

type Answer = Result<Vec<u8>, (i32, String)>;

/// The answer to one call, and whether the plugin then ends.
fn answer(req: &ttrpc::Request, handler: &mut impl Handler) -> (Answer, bool) {
    if req.service != api::PLUGIN_SERVICE {
        return (unimplemented(req), false);
    }
    let empty = Ok(Vec::new());
    match req.method.as_str() {
        "Configure" => {
            let resp = api::ConfigureResponse {
                events: api::event_mask(api::EVENT_CREATE_CONTAINER),
            };
            (Ok(resp.encode_to_vec()), false)
        }
        "Synchronize" => (
            Ok(api::SynchronizeResponse::default().encode_to_vec()),
            false,
        ),
        "Shutdown" => (empty, true),
        "CreateContainer" => match CreateContainerRequest::decode(req.payload.as_slice()) {
            Ok(create) => match handler.create_container(&create) {
                Ok(()) => (
                    Ok(api::CreateContainerResponse::default().encode_to_vec()),
                    false,
                ),
                Err(message) => (Err((code::UNKNOWN, message)), false),
            },
            Err(e) => (
                Err((
                    code::INVALID_ARGUMENT,
                    format!("undecodable CreateContainer request: {e}"),
                )),
                false,
            ),
        },
        // Not subscribed to: answered with no change, should a runtime call them anyway.
        "UpdateContainer" | "StopContainer" | "StateChange" => (empty, false),
        _ => (unimplemented(req), false),
    }
}

fn unimplemented(req: &ttrpc::Request) -> Answer {
    Err((
        code::UNIMPLEMENTED,
        format!(
            "{}/{} is not served by this plugin",
            req.service, req.method
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    /// Refuses containers named "bad".
    struct Judge {
        registered: bool,
    }

    impl Handler for Judge {
        fn create_container(&mut self, r: &CreateContainerRequest) -> Result<(), String> {
            match r.container.as_ref().map(|c| c.name.as_str()) {
                Some("bad") => Err("refused: bad".into()),
                _ => Ok(()),
            }
        }
        fn registered(&mut self) {
            self.registered = true;
        }
    }

    fn me() -> Identity {
        Identity {
            name: "nfs-gds".into(),
            idx: "10".into(),
        }
    }

    /// The runtime's end: reads one ttrpc message of connection `want`.
    fn read_message(s: &mut UnixStream, want: u32) -> ttrpc::Frame {
        let mut demux = Demux::default();
        let mut stream = ttrpc::Stream::default();
        let mut buf = [0u8; 4096];
        loop {
            if let Some(f) = stream.next_frame().unwrap() {
                return f;
            }
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "the plugin closed the stream");
            demux.push(&buf[..n]);
            while let Some((id, p)) = demux.next_frame().unwrap() {
                assert_eq!(id, want, "a frame on connection {id}");
                stream.push(&p);
            }
        }
    }

    fn call(s: &mut UnixStream, stream: u32, method: &str, payload: Vec<u8>) -> ttrpc::Response {
        let bytes = ttrpc::request(stream, api::PLUGIN_SERVICE, method, payload);
        s.write_all(&mux::encode(PLUGIN_CONN, &bytes)).unwrap();
        let f = read_message(s, PLUGIN_CONN);
        assert_eq!((f.stream, f.kind), (stream, ttrpc::TYPE_RESPONSE));
        ttrpc::Response::decode(f.payload.as_slice()).unwrap()
    }

    #[test]
    fn registers_subscribes_to_create_container_and_refuses_by_the_handler() {
        let (mut plugin_end, mut runtime) = UnixStream::pair().unwrap();
        let t = std::thread::spawn(move || {
            let mut judge = Judge { registered: false };
            let end = serve(&mut plugin_end, &me(), Duration::from_secs(5), &mut judge);
            (end.unwrap(), judge.registered)
        });
        let f = read_message(&mut runtime, RUNTIME_CONN);
        let req = ttrpc::Request::decode(f.payload.as_slice()).unwrap();
        assert_eq!(
            (req.service.as_str(), req.method.as_str()),
            (api::RUNTIME_SERVICE, "RegisterPlugin")
        );
        let reg = api::RegisterPluginRequest::decode(req.payload.as_slice()).unwrap();
        assert_eq!(
            (reg.plugin_name.as_str(), reg.plugin_idx.as_str()),
            ("nfs-gds", "10")
        );
        runtime
            .write_all(&mux::encode(
                RUNTIME_CONN,
                &ttrpc::response(f.stream, Ok(vec![])),
            ))
            .unwrap();
        let conf = call(&mut runtime, 1, "Configure", vec![]);
        let events = api::ConfigureResponse::decode(conf.payload.as_slice())
            .unwrap()
            .events;
        assert_eq!(events, 8, "CreateContainer is event 4, bit 3");
        assert_eq!(call(&mut runtime, 3, "Synchronize", vec![]).status, None);
        let create = |name: &str| {
            CreateContainerRequest {
                pod: None,
                container: Some(api::Container {
                    name: name.into(),
                    ..Default::default()
                }),
            }
            .encode_to_vec()
        };
        assert_eq!(
            call(&mut runtime, 5, "CreateContainer", create("good")).status,
            None
        );
        let refused = call(&mut runtime, 7, "CreateContainer", create("bad"))
            .status
            .unwrap();
        assert_eq!(
            (refused.code, refused.message.as_str()),
            (code::UNKNOWN, "refused: bad")
        );
        let unknown = call(&mut runtime, 9, "ValidateContainerAdjustment", vec![])
            .status
            .unwrap();
        assert_eq!(unknown.code, code::UNIMPLEMENTED);
        assert_eq!(call(&mut runtime, 11, "Shutdown", vec![]).status, None);
        assert_eq!(t.join().unwrap(), (End::Shutdown, true));
    }

    #[test]
    fn a_runtime_that_never_answers_the_registration_times_it_out() {
        let (mut plugin_end, _runtime) = UnixStream::pair().unwrap();
        let started = Instant::now();
        let mut judge = Judge { registered: false };
        let err = serve(
            &mut plugin_end,
            &me(),
            Duration::from_millis(200),
            &mut judge,
        )
        .unwrap_err();
        assert!(matches!(err, PluginError::RegisterTimeout(_)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(!judge.registered);
    }

    #[test]
    fn a_closed_stream_ends_the_connection() {
        let (mut plugin_end, runtime) = UnixStream::pair().unwrap();
        drop(runtime);
        let mut judge = Judge { registered: false };
        // Writing the registration into a closed pair fails, or reading finds the end.
        match serve(&mut plugin_end, &me(), Duration::from_secs(5), &mut judge) {
            Ok(End::Closed) | Err(PluginError::Io(_)) => {}
            other => panic!("{other:?}"),
        }
    }
}
