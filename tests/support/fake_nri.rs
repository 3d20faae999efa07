//! A fake NRI runtime: the runtime's end of one plugin connection, speaking NRI's multiplexer
//! and ttrpc with the crate's own framing, as containerd does. For the plugin's integration
//! tests and its latency benchmark (`benches/nri_latency.rs`).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use nfs_gds::nri::api;
use nfs_gds::nri::mux::{self, Demux, PLUGIN_CONN, RUNTIME_CONN};
use nfs_gds::nri::ttrpc;
use prost::Message;

/// The runtime's end of one plugin connection.
pub struct Runtime {
    s: UnixStream,
    demux: Demux,
    calls: ttrpc::Stream,
    answers: ttrpc::Stream,
    next: u32,
}

impl Runtime {
    pub fn new(s: UnixStream) -> Self {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Runtime {
            s,
            demux: Demux::default(),
            calls: ttrpc::Stream::default(),
            answers: ttrpc::Stream::default(),
            next: 1,
        }
    }

    /// The next ttrpc message on connection `conn`.
    pub fn read(&mut self, conn: u32) -> ttrpc::Frame {
        let mut buf = [0u8; 65536];
        loop {
            let stream = if conn == PLUGIN_CONN {
                &mut self.answers
            } else {
                &mut self.calls
            };
            if let Some(f) = stream.next_frame().unwrap() {
                return f;
            }
            let n = match self.s.read(&mut buf) {
                // A signal meant for another test's child.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => r.expect("the plugin answers within 30 s"),
            };
            assert!(n > 0, "the plugin closed the connection");
            self.demux.push(&buf[..n]);
            while let Some((id, p)) = self.demux.next_frame().unwrap() {
                // The plugin answers on 1 (its service) and calls on 2 (the runtime's).
                if id == PLUGIN_CONN {
                    self.answers.push(&p);
                } else {
                    self.calls.push(&p);
                }
            }
        }
    }

    /// Reads the plugin's RegisterPlugin and answers it; returns (name, idx).
    pub fn accept_registration(&mut self) -> (String, String) {
        let f = self.read(RUNTIME_CONN);
        let req = ttrpc::Request::decode(f.payload.as_slice()).unwrap();
        assert_eq!(
            (req.service.as_str(), req.method.as_str()),
            (api::RUNTIME_SERVICE, "RegisterPlugin")
        );
        let reg = api::RegisterPluginRequest::decode(req.payload.as_slice()).unwrap();
        let answer = ttrpc::response(f.stream, Ok(Vec::new()));
        self.s
            .write_all(&mux::encode(RUNTIME_CONN, &answer))
            .unwrap();
        (reg.plugin_name, reg.plugin_idx)
    }

    pub fn call(&mut self, method: &str, payload: Vec<u8>) -> ttrpc::Response {
        let stream = self.next;
        self.next += 2;
        let bytes = ttrpc::request(stream, api::PLUGIN_SERVICE, method, payload);
        self.s.write_all(&mux::encode(PLUGIN_CONN, &bytes)).unwrap();
        let f = self.read(PLUGIN_CONN);
        assert_eq!(f.stream, stream);
        ttrpc::Response::decode(f.payload.as_slice()).unwrap()
    }

    /// Configure and Synchronize, as the runtime does after a registration.
    pub fn configure(&mut self) {
        let conf = self.call(
            "Configure",
            api::ConfigureRequest {
                runtime_name: "containerd".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        );
        assert_eq!(conf.status, None);
        let events = api::ConfigureResponse::decode(conf.payload.as_slice())
            .unwrap()
            .events;
        assert_eq!(events, 1 << 3, "subscribed to CreateContainer alone");
        assert_eq!(self.call("Synchronize", Vec::new()).status, None);
    }
}
