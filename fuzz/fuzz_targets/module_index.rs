//! The module tree's indexes as modprobe reads them: `modules.dep`, `modules.alias` and
//! `modules.builtin` (split out of the input at the first two NUL bytes), then what the checks
//! ask of them: the canonical name of `rpcrdma` and its aliases, and what `modprobe rpcrdma`
//! would load; and the same input as `/proc/modules`. The binary `.bin` indexes have their own
//! target, `kmod_index_bin`.
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
    let (dep_text, alias_text, builtin_text) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let dep = parse_modules_dep(dep_text);
    let _ = parse_modules_alias(alias_text);
    let _ = parse_modules_builtin(builtin_text);
    for entry in dep.iter().take(16) {
        let _ = ModuleOrigin::of(&entry.file).describe();
        let _ = module_name_of_path(&entry.file);
    }
    // A root that does not exist: resolving stats the module file it names, and must find none.
    let root = Root::new("/nonexistent-nfs-gds-fuzz-root");
    let tree = ModuleTree::from_text(
        &root,
        "/lib/modules/6.8.0",
        Some(dep_text),
        alias_text,
        builtin_text,
    );
    for name in ["rpcrdma", "xprtrdma", "svcrdma"] {
        let _ = tree.canonical_name(name);
        let _ = tree.resolve(&root, name);
    }
});
