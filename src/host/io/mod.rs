//! How nfs-gds reads and writes the host: the hardened reader every read goes through, the output
//! directory every write goes through, line streaming, configuration directories, the external
//! programs it may run (and their recorded outputs in a bundle), the system of a tree below `--root`, and the root-only facts cache.

pub mod conf_dirs;
pub mod context;
pub mod env;
pub mod error;
pub mod facts_cache;
pub mod file_identity;
pub mod file_kind;
pub mod fill_lock;
pub mod hosts_file;
pub mod inputs;
pub mod lines;
pub mod out_dir;
pub mod programs;
pub mod reader;
pub mod recorded;
pub mod root;
pub mod tree_system;
pub mod unchanged;
pub mod walk_in_root;
