//! The module tree's indexes as modprobe reads them: `modules.dep`, `modules.alias` and
//! `modules.builtin` (split out of the input at the first two NUL bytes), then what the checks
//! ask of them: the canonical name of `rpcrdma` and its aliases, and what `modprobe rpcrdma`
//! would load; and the same input as `/proc/modules`. The binary `.bin` indexes have no parser
//! in the crate, so they have no target.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nfs_gds::host::modules::{
    module_name_of_path, parse_modules_alias, parse_modules_builtin, parse_modules_dep,
    parse_proc_modules, ModuleOrigin, ModuleTree,
};
use nfs_gds::host::Root;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse_proc_modules(&text);
    let mut parts = text.splitn(3, '\0');
    let dep = parse_modules_dep(parts.next().unwrap_or_default());
    let alias = parse_modules_alias(parts.next().unwrap_or_default());
    let builtin = parse_modules_builtin(parts.next().unwrap_or_default());
    for entry in dep.iter().take(16) {
        let _ = ModuleOrigin::of(&entry.file).describe();
        let _ = module_name_of_path(&entry.file);
    }
    let tree = ModuleTree {
        dir_rel: "/lib/modules/6.8.0".to_string(),
        dep: Some(dep),
        alias,
        builtin,
    };
    // A root that does not exist: resolving stats the module file it names, and must find none.
    let root = Root::new("/nonexistent-nfs-gds-fuzz-root");
    for name in ["rpcrdma", "xprtrdma", "svcrdma"] {
        let _ = tree.canonical_name(name);
        let _ = tree.resolve(&root, name);
    }
});
