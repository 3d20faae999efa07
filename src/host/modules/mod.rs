//! Which kernel modules are loaded, and which file `modprobe NAME` would load.
//!
//! Resolution follows modprobe: a name or alias (`modules.alias`: `xprtrdma` and `rpcrdma6` are
//! aliases of `rpcrdma`) → the entry in `modules.dep`, which already reflects depmod's search order
//! (so DKMS `updates/dkms/`, RPM `extra/mlnx-nfsrdma/` and vendor paths win over `kernel/` where
//! the distribution's depmod configuration says so) → the file; or "built in" from
//! `modules.builtin`. Module names compare with `-` and `_` as the same character, as the kernel
//! does.

pub mod build_symvers;
pub mod crcless_kernel;
pub mod depmod_files;
pub mod gpl_rule;
pub mod kallsyms;
pub mod kernel_config;
pub mod kernel_log;
pub mod loaded_build;
pub mod loaded_hooks;
pub mod localio;
pub mod modprobe_config;
pub mod modprobe_effect;
pub mod module_files;
pub mod module_load;
pub mod module_name;
pub mod module_owners;
pub mod module_place;
pub mod module_tree;
pub mod proc_modules;
pub mod rpcrdma_requests;
pub mod sig_enforcement;
pub mod symbol_providers;
pub mod sysmodule;

pub use depmod_files::{
    parse_modules_alias, parse_modules_builtin, parse_modules_dep, DepEntry, MAX_DEPS,
};
pub use module_name::{module_name_of_path, normalize_name};
pub use module_place::ModuleOrigin;
pub use module_tree::{ModuleTree, Resolution};
pub use proc_modules::{parse_proc_modules, read_proc_modules, LoadedModule};
