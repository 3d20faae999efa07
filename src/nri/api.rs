//! The NRI messages the plugin reads and writes, declared by hand with `prost` derives from the
//! vendored NRI 0.8.0 `api.proto` (`vendor/nri/api.proto`, package `nri.pkg.api.v1alpha1`):
//! only the messages and fields the plugin uses, each with the field number of the proto (a
//! test reads the proto and checks every one). A field this file does not declare is skipped
//! when decoding, which is how a newer runtime's requests are read: NRI after 0.8 adds fields
//! to `Container` and `PodSandbox` (user, status, timestamps, more Linux settings) and methods to
//! the plugin service (`UpdatePodSandbox`, `PostUpdatePodSandbox`, `ValidateContainerAdjustment`),
//! which a runtime calls only on plugins that subscribe to them; one called anyway is answered
//! "unimplemented".

use std::collections::HashMap;

/// The ttrpc service the runtime serves (connection 2).
pub const RUNTIME_SERVICE: &str = "nri.pkg.api.v1alpha1.Runtime";
/// The ttrpc service the plugin serves (connection 1).
pub const PLUGIN_SERVICE: &str = "nri.pkg.api.v1alpha1.Plugin";

/// `Event.CREATE_CONTAINER` of the proto.
pub const EVENT_CREATE_CONTAINER: i32 = 4;

/// The `ConfigureResponse.events` bit of `event`: bit `event - 1` (NRI's `EventMask`).
pub fn event_mask(event: i32) -> i32 {
    1 << (event - 1)
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RegisterPluginRequest {
    #[prost(string, tag = "1")]
    pub plugin_name: String,
    #[prost(string, tag = "2")]
    pub plugin_idx: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Empty {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfigureRequest {
    #[prost(string, tag = "1")]
    pub config: String,
    #[prost(string, tag = "2")]
    pub runtime_name: String,
    #[prost(string, tag = "3")]
    pub runtime_version: String,
    #[prost(int64, tag = "4")]
    pub registration_timeout: i64,
    #[prost(int64, tag = "5")]
    pub request_timeout: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfigureResponse {
    #[prost(int32, tag = "2")]
    pub events: i32,
}

/// Its pods and containers are not read: the plugin keeps no state of them.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SynchronizeRequest {
    #[prost(bool, tag = "3")]
    pub more: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SynchronizeResponse {
    #[prost(bool, tag = "2")]
    pub more: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CreateContainerRequest {
    #[prost(message, optional, tag = "1")]
    pub pod: Option<PodSandbox>,
    #[prost(message, optional, tag = "2")]
    pub container: Option<Container>,
}

/// Always empty: the plugin adjusts nothing.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CreateContainerResponse {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PodSandbox {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub uid: String,
    #[prost(string, tag = "4")]
    pub namespace: String,
    #[prost(map = "string, string", tag = "6")]
    pub annotations: HashMap<String, String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Container {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub pod_sandbox_id: String,
    #[prost(string, tag = "3")]
    pub name: String,
    #[prost(map = "string, string", tag = "6")]
    pub annotations: HashMap<String, String>,
    #[prost(message, repeated, tag = "9")]
    pub mounts: Vec<Mount>,
    #[prost(message, optional, tag = "11")]
    pub linux: Option<LinuxContainer>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Mount {
    #[prost(string, tag = "1")]
    pub destination: String,
    #[prost(string, tag = "2")]
    pub r#type: String,
    #[prost(string, tag = "3")]
    pub source: String,
    #[prost(string, repeated, tag = "4")]
    pub options: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LinuxContainer {
    #[prost(message, repeated, tag = "2")]
    pub devices: Vec<LinuxDevice>,
    #[prost(message, optional, tag = "3")]
    pub resources: Option<LinuxResources>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LinuxDevice {
    #[prost(string, tag = "1")]
    pub path: String,
    #[prost(string, tag = "2")]
    pub r#type: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LinuxResources {
    #[prost(message, repeated, tag = "7")]
    pub devices: Vec<LinuxDeviceCgroup>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LinuxDeviceCgroup {
    #[prost(bool, tag = "1")]
    pub allow: bool,
    #[prost(string, tag = "2")]
    pub r#type: String,
    #[prost(message, optional, tag = "3")]
    pub major: Option<OptionalInt64>,
    #[prost(message, optional, tag = "4")]
    pub minor: Option<OptionalInt64>,
    #[prost(string, tag = "5")]
    pub access: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct OptionalInt64 {
    #[prost(int64, tag = "1")]
    pub value: i64,
}
