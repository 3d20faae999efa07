//! The wire of NRI, the Node Resource Interface containerd (≥ 2.0) and CRI-O (≥ 1.30) call
//! node plugins through: one Unix stream carries a multiplexer ([`mux`]) whose connection 1 is
//! the plugin's service (the runtime calls it) and connection 2 the runtime's (the plugin calls
//! it); each speaks ttrpc ([`ttrpc`]), whose payloads are NRI's protobuf messages ([`api`]).
//! [`plugin`] is the plugin's side of one connection: register, answer `Configure`,
//! `Synchronize`, `CreateContainer` and `Shutdown`, and hand each container to a judge.
//!
//! Written by hand, small and synchronous on std's Unix sockets: NRI's own Go package is the
//! only implementation, no Rust crate speaks it, the ttrpc crate's server wants a listener and
//! an async runtime this binary does not carry, and a plugin answers one request at a time.
//! Only the message types are derived (`prost`), from the NRI 0.8.0 `api.proto` vendored in
//! `vendor/nri/`; no `protoc` runs at build time.

pub mod api;
pub mod mux;
pub mod plugin;
pub mod ttrpc;
