//! What modprobe's configuration does to one load request, with file:line evidence.
//!
//! The same request reaches modprobe two ways: an admin's `modprobe rpcrdma`, and the kernel's
//! own `request_module()` on the first RDMA mount, which runs `modprobe -q -- NAME`. Kernels with
//! upstream commit d5aa6b22e225 ("SUNRPC: xprt_load_transport() needs to support the netid
//! "rdma6"", v5.11, also in the 5.4 and 5.10 stable series) request `rpc<netid>`: `rpcrdma`
//! for `proto=rdma`, `rpcrdma6` for `proto=rdma6`; older kernels request `xprtrdma`. `rpcrdma`
//! is a module name, the other two are aliases, and that difference decides what a `blacklist`
//! line does.
//!
//! libkmod resolves a name in this order (`kmod_module_new_from_lookup`): `alias` lines of the
//! configuration (fnmatch patterns, every match kept), a module of that name in `modules.dep`,
//! `modules.symbols`, an `install`/`remove` line for that exact name, `modules.alias`, then
//! `modules.builtin`. For each module found, a `blacklist` line stops the load only when the
//! module was reached through an alias (`KMOD_PROBE_APPLY_BLACKLIST_ALIAS_ONLY`; modprobe then
//! exits 0 having loaded nothing). Otherwise modprobe loads the `softdep` pre modules, the
//! dependencies, the module, then the post modules, and for each of them an `install` line (the
//! first for that name) runs instead of loading it. `options` lines, all of them, and
//! `module.param=` on the command line give the module's parameters.
//!
//! [`explain_request`] is pure: the configuration is already read, and the module index is
//! asked through [`ModuleIndex`], which [`TreeIndex`] implements over a
//! [`ModuleTree`](crate::host::modules::module_tree::ModuleTree).

use std::cell::RefCell;
use std::collections::HashMap;

use serde::Serialize;

use super::module_name::{module_name_of_path, normalize_name};
use super::module_tree::{ModuleTree, Resolution};
use crate::host::io::root::Root;
use crate::host::modules::modprobe_config::{ConfigLine, Directive, ModprobeConfig, Origin};
use crate::kmod::fnmatch::fnmatch;

/// What kernels with d5aa6b22e225 request for `proto=rdma6`.
pub const KERNEL_REQUEST_RDMA6: &str = "rpcrdma6";
/// What kernels before d5aa6b22e225 request for `proto=rdma`.
pub const KERNEL_REQUEST_LEGACY: &str = "xprtrdma";

/// What the module index alone says a name is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum IndexHit {
    /// A module of that name: a file in `modules.dep` (`file` as written there) or built in.
    Module {
        module: String,
        file: Option<String>,
    },
    /// An alias in `modules.alias` of `module`.
    Alias {
        module: String,
        file: Option<String>,
    },
    /// Neither.
    Missing,
}

/// The module index, as modprobe asks it.
pub trait ModuleIndex {
    /// What `name` is in `modules.dep`, `modules.builtin` and `modules.alias`.
    fn find(&self, name: &str) -> IndexHit;
    /// The modules `module` depends on, by name, in `modules.dep` order.
    fn dependencies(&self, module: &str) -> Vec<String>;
}

/// [`ModuleIndex`] over one kernel's module tree. Answers are remembered: one request asks
/// about the same few names several times, and each [`ModuleTree::resolve`] scans the index.
#[derive(Debug)]
pub struct TreeIndex<'a> {
    root: &'a Root,
    tree: &'a ModuleTree,
    resolved: RefCell<HashMap<String, Resolution>>,
}

impl<'a> TreeIndex<'a> {
    pub fn new(root: &'a Root, tree: &'a ModuleTree) -> Self {
        TreeIndex {
            root,
            tree,
            resolved: RefCell::new(HashMap::new()),
        }
    }

    fn resolve(&self, name: &str) -> Resolution {
        if let Some(r) = self.resolved.borrow().get(name) {
            return r.clone();
        }
        let r = self.tree.resolve(self.root, name).unwrap_or_else(|e| {
            tracing::warn!("{e}: taking {name} as not found");
            Resolution::NotFound {
                module: name.to_string(),
            }
        });
        self.resolved
            .borrow_mut()
            .insert(name.to_string(), r.clone());
        r
    }
}

impl ModuleIndex for TreeIndex<'_> {
    fn find(&self, name: &str) -> IndexHit {
        let wanted = normalize_name(name);
        let (module, file) = match self.resolve(&wanted) {
            Resolution::File {
                module, rel_path, ..
            } => (module, Some(rel_path)),
            Resolution::BuiltIn { module } => (module, None),
            Resolution::NotFound { .. } | Resolution::NoModuleTree { .. } => {
                return IndexHit::Missing
            }
        };
        if module == wanted {
            IndexHit::Module { module, file }
        } else {
            IndexHit::Alias { module, file }
        }
    }

    fn dependencies(&self, module: &str) -> Vec<String> {
        match self.resolve(&normalize_name(module)) {
            Resolution::File { deps, .. } => deps.iter().map(|d| module_name_of_path(d)).collect(),
            _ => Vec::new(),
        }
    }
}

/// How the requested name was turned into module names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "via", rename_all = "kebab-case")]
pub enum Lookup {
    /// `alias` lines of the configuration matched (they win over everything else).
    ConfigAlias { lines: Vec<Origin> },
    /// A module of that name.
    ModuleName,
    /// Only an `install` line names it.
    InstallLine { origin: Origin },
    /// `modules.alias`.
    IndexAlias,
    /// Nothing: `modprobe: FATAL: Module NAME not found`.
    NotFound,
}

/// What an `install` command does, as far as its text tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstallKind {
    /// `/bin/true`, `/bin/false`, `:` and the like: nothing is loaded.
    Disables,
    /// Runs `modprobe --ignore-install` (or `-i`) of the module itself, so it still loads, with
    /// whatever else the command does.
    StillLoads,
    /// Any other command: what it loads cannot be told from here.
    Opaque,
}

/// What happens to one module of the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum ModuleOutcome {
    /// modprobe loads the file (`file` as in `modules.dep`; `None` when built in).
    Loads { file: Option<String> },
    /// An `install` line runs instead.
    Replaced {
        command: String,
        kind: InstallKind,
        origin: Origin,
    },
    /// Blacklisted and reached through an alias: nothing is loaded, modprobe still exits 0.
    Blacklisted { origin: Origin },
    /// The configuration names a module the index does not have.
    Missing,
}

/// One module modprobe handles for the request, in the order it handles them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleStep {
    pub module: String,
    /// Why it is in the list: `target`, `dependency of X`, `softdep pre of X`, `softdep post of X`.
    pub role: String,
    #[serde(flatten)]
    pub outcome: ModuleOutcome,
    /// Its parameters from `options` lines and the command line, with where each came from.
    pub options: Vec<(String, Origin)>,
}

/// A configuration line that bears on the request and what it does (or does not do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Effect {
    pub origin: Origin,
    pub line: String,
    pub says: String,
}

/// The whole answer for one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestExplanation {
    /// The name asked for, as given.
    pub request: String,
    pub lookup: Lookup,
    /// The modules the name resolved to (usually one).
    pub targets: Vec<String>,
    /// Every module modprobe handles, in order.
    pub steps: Vec<ModuleStep>,
    /// The configuration lines that matter, in reading order.
    pub effects: Vec<Effect>,
}

impl RequestExplanation {
    /// Whether `module` ends up loaded from its file by this request (not replaced, not
    /// blacklisted, not missing).
    pub fn loads(&self, module: &str) -> bool {
        let m = normalize_name(module);
        self.steps
            .iter()
            .any(|s| s.module == m && matches!(s.outcome, ModuleOutcome::Loads { .. }))
    }

    /// Whether the configuration changes anything about this request.
    pub fn config_changes_it(&self) -> bool {
        !self.effects.is_empty()
    }
}

/// Classifies an `install` command.
pub fn classify_install(module: &str, command: &str) -> InstallKind {
    let cmd = command.trim();
    let first = cmd.split_whitespace().next().unwrap_or("");
    let base = first.rsplit('/').next().unwrap_or(first);
    let single = !cmd.contains([';', '&', '|']);
    if single && matches!(base, "true" | "false" | ":") {
        return InstallKind::Disables;
    }
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let runs_itself = words
        .iter()
        .any(|w| w.rsplit('/').next() == Some("modprobe"))
        && words.iter().any(|w| *w == "--ignore-install" || *w == "-i")
        && words
            .iter()
            .any(|w| normalize_name(w) == normalize_name(module));
    if runs_itself {
        InstallKind::StillLoads
    } else {
        InstallKind::Opaque
    }
}

/// What `modprobe REQUEST` (or the kernel's request of that name) does under `config`.
pub fn explain_request(
    config: &ModprobeConfig,
    index: &dyn ModuleIndex,
    request: &str,
) -> RequestExplanation {
    let name = normalize_name(request);
    let mut effects: Vec<Effect> = Vec::new();
    let effect = |l: &ConfigLine, says: String| Effect {
        origin: l.origin.clone(),
        line: l.text.clone(),
        says,
    };

    // 1. alias lines of the configuration.
    let alias_lines: Vec<&ConfigLine> = config
        .lines
        .iter()
        .filter(|l| match &l.directive {
            Directive::Alias { pattern, .. } => fnmatch(pattern.as_bytes(), name.as_bytes()),
            _ => false,
        })
        .collect();
    let (lookup, targets, via_alias): (Lookup, Vec<String>, bool) = if !alias_lines.is_empty() {
        for l in &alias_lines {
            effects.push(effect(
                l,
                format!(
                    "makes `{request}` mean `{}`, ahead of the module index",
                    l.directive.module()
                ),
            ));
        }
        (
            Lookup::ConfigAlias {
                lines: alias_lines.iter().map(|l| l.origin.clone()).collect(),
            },
            alias_lines
                .iter()
                .map(|l| l.directive.module().to_string())
                .collect(),
            true,
        )
    } else {
        match index.find(&name) {
            IndexHit::Module { module, .. } => (Lookup::ModuleName, vec![module], false),
            hit => match first_install(config, &name) {
                Some((l, _)) => (
                    Lookup::InstallLine {
                        origin: l.origin.clone(),
                    },
                    vec![name.clone()],
                    false,
                ),
                None => match hit {
                    IndexHit::Alias { module, .. } => (Lookup::IndexAlias, vec![module], true),
                    _ => (Lookup::NotFound, Vec::new(), false),
                },
            },
        }
    };

    let mut steps: Vec<ModuleStep> = Vec::new();
    let mut planned: std::collections::HashSet<String> = std::collections::HashSet::new();
    for target in &targets {
        let blacklist = config
            .about(target)
            .find(|l| matches!(l.directive, Directive::Blacklist { .. }));
        if let Some(b) = blacklist {
            if via_alias {
                effects.push(effect(
                    b,
                    format!("stops `{request}`: {target} is reached through an alias and blacklisted, so modprobe loads nothing and still exits 0"),
                ));
                steps.push(ModuleStep {
                    module: target.clone(),
                    role: "target".into(),
                    outcome: ModuleOutcome::Blacklisted {
                        origin: b.origin.clone(),
                    },
                    options: Vec::new(),
                });
                continue;
            }
            effects.push(effect(
                b,
                format!("does not stop `{request}`: a blacklist only filters aliases, and `{request}` names the module itself"),
            ));
        }
        let mut order: Vec<(String, String)> = Vec::new();
        let softdep = config.about(target).find_map(|l| match &l.directive {
            Directive::Softdep { pre, post, .. } => Some((l, pre.clone(), post.clone())),
            _ => None,
        });
        if let Some((l, pre, _)) = &softdep {
            for m in pre {
                order.push((m.clone(), format!("softdep pre of {target}")));
            }
            effects.push(effect(
                l,
                format!(
                    "loads {} before and {} after {target}",
                    list_or_none(&l.directive, true),
                    list_or_none(&l.directive, false)
                ),
            ));
        }
        for d in index.dependencies(target) {
            order.push((d, format!("dependency of {target}")));
        }
        order.push((target.clone(), "target".into()));
        if let Some((_, _, post)) = &softdep {
            for m in post {
                order.push((m.clone(), format!("softdep post of {target}")));
            }
        }
        for (module, role) in order {
            // A set, not a scan of the steps: a module may have many dependencies.
            if !planned.insert(module.clone()) {
                continue;
            }
            let options: Vec<(String, Origin)> = config
                .about(&module)
                .filter_map(|l| match &l.directive {
                    Directive::Options { options, .. } => Some((options.clone(), l.origin.clone())),
                    _ => None,
                })
                .collect();
            for l in config
                .about(&module)
                .filter(|l| matches!(l.directive, Directive::Options { .. }))
            {
                effects.push(effect(l, format!("sets parameters of {module}")));
            }
            let outcome = match first_install(config, &module) {
                Some((l, command)) => {
                    let kind = classify_install(&module, command);
                    let what = match kind {
                        InstallKind::Disables => "so it is never loaded",
                        InstallKind::StillLoads => {
                            "which still loads it with modprobe --ignore-install"
                        }
                        InstallKind::Opaque => "and what that command loads cannot be told",
                    };
                    effects.push(effect(
                        l,
                        format!("replaces the load of {module} ({role}) with `{command}`, {what}"),
                    ));
                    ModuleOutcome::Replaced {
                        command: command.clone(),
                        kind,
                        origin: l.origin.clone(),
                    }
                }
                None => match index.find(&module) {
                    IndexHit::Module { file, .. } => ModuleOutcome::Loads { file },
                    _ => ModuleOutcome::Missing,
                },
            };
            steps.push(ModuleStep {
                module,
                role,
                outcome,
                options,
            });
        }
    }
    effects.sort_by(|a, b| {
        let pos = |e: &Effect| {
            config
                .lines
                .iter()
                .position(|l| l.origin == e.origin && l.text == e.line)
                .unwrap_or(usize::MAX)
        };
        pos(a).cmp(&pos(b))
    });
    effects.dedup();
    RequestExplanation {
        request: request.to_string(),
        lookup,
        targets,
        steps,
        effects,
    }
}

fn list_or_none(d: &Directive, pre: bool) -> String {
    let Directive::Softdep { pre: p, post, .. } = d else {
        return "nothing".into();
    };
    let v = if pre { p } else { post };
    if v.is_empty() {
        "nothing".into()
    } else {
        v.join(", ")
    }
}

/// The first `install` line for `module` and its command (modprobe runs only that one).
fn first_install<'a>(
    config: &'a ModprobeConfig,
    module: &str,
) -> Option<(&'a ConfigLine, &'a String)> {
    config.lines.iter().find_map(|l| match &l.directive {
        Directive::Install { module: m, command } if m == module => Some((l, command)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::modules::modprobe_config::parse_modprobe_conf;
    use crate::kmod::RPCRDMA;

    /// An index with rpcrdma (aliases xprtrdma, rpcrdma6) depending on ib_core and sunrpc.
    struct FakeIndex;

    impl ModuleIndex for FakeIndex {
        fn find(&self, name: &str) -> IndexHit {
            let file = |m: &str| Some(format!("kernel/{m}.ko"));
            match name {
                "rpcrdma" | "ib_core" | "sunrpc" | "nvidia_fs" => IndexHit::Module {
                    module: name.into(),
                    file: file(name),
                },
                "xprtrdma" | "rpcrdma6" => IndexHit::Alias {
                    module: "rpcrdma".into(),
                    file: file("rpcrdma"),
                },
                _ => IndexHit::Missing,
            }
        }
        fn dependencies(&self, module: &str) -> Vec<String> {
            match module {
                "rpcrdma" => vec!["ib_core".into(), "sunrpc".into()],
                _ => Vec::new(),
            }
        }
    }

    fn config(text: &str) -> ModprobeConfig {
        let (lines, bad) = parse_modprobe_conf(text, "/etc/modprobe.d/test.conf");
        assert!(bad.is_empty(), "{bad:?}");
        ModprobeConfig {
            lines,
            ..Default::default()
        }
    }

    #[test]
    fn no_configuration_loads_dependencies_then_the_module() {
        let e = explain_request(&config(""), &FakeIndex, "rpcrdma");
        assert_eq!(e.lookup, Lookup::ModuleName);
        let order: Vec<&str> = e.steps.iter().map(|s| s.module.as_str()).collect();
        assert_eq!(order, vec!["ib_core", "sunrpc", "rpcrdma"]);
        assert!(e.loads("rpcrdma"));
        assert!(!e.config_changes_it());
        let e = explain_request(&config(""), &FakeIndex, "xprtrdma");
        assert_eq!(e.lookup, Lookup::IndexAlias);
        assert!(e.loads("rpcrdma"));
    }

    #[test]
    fn blacklist_stops_the_alias_but_not_the_module_name() {
        let c = config("blacklist rpcrdma\n");
        let by_alias = explain_request(&c, &FakeIndex, "xprtrdma");
        assert!(!by_alias.loads("rpcrdma"));
        assert!(matches!(
            by_alias.steps[0].outcome,
            ModuleOutcome::Blacklisted { ref origin } if origin.line == 1
        ));
        assert!(
            by_alias.effects[0].says.contains("stops"),
            "{:?}",
            by_alias.effects
        );
        assert_eq!(
            by_alias.effects[0].origin.to_string(),
            "/etc/modprobe.d/test.conf:1"
        );
        let rdma6 = explain_request(&c, &FakeIndex, KERNEL_REQUEST_RDMA6);
        assert!(!rdma6.loads("rpcrdma"));
        let by_name = explain_request(&c, &FakeIndex, RPCRDMA);
        assert!(by_name.loads("rpcrdma"));
        assert!(
            by_name.effects[0].says.contains("does not stop"),
            "{:?}",
            by_name.effects
        );
    }

    #[test]
    fn install_line_replaces_the_load_by_either_name() {
        let c = config("install rpcrdma /bin/true\ninstall rpcrdma /bin/false\n");
        for request in ["rpcrdma", "xprtrdma"] {
            let e = explain_request(&c, &FakeIndex, request);
            assert!(!e.loads("rpcrdma"), "{request}");
            let target = e.steps.iter().find(|s| s.module == "rpcrdma").unwrap();
            match &target.outcome {
                ModuleOutcome::Replaced {
                    kind,
                    origin,
                    command,
                } => {
                    assert_eq!(*kind, InstallKind::Disables);
                    assert_eq!(origin.line, 1, "the first install line wins");
                    assert_eq!(command, "/bin/true");
                }
                other => panic!("{other:?}"),
            }
            assert!(e.loads("ib_core"), "dependencies still load");
        }
    }

    #[test]
    fn install_on_a_dependency_and_wrapping_installs() {
        let c = config("install ib_core /usr/bin/false\ninstall rpcrdma /sbin/modprobe --ignore-install rpcrdma && /usr/bin/logger loaded\n");
        let e = explain_request(&c, &FakeIndex, "rpcrdma");
        let kinds: Vec<(&str, InstallKind)> = e
            .steps
            .iter()
            .filter_map(|s| match &s.outcome {
                ModuleOutcome::Replaced { kind, .. } => Some((s.module.as_str(), *kind)),
                _ => None,
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("ib_core", InstallKind::Disables),
                ("rpcrdma", InstallKind::StillLoads)
            ]
        );
        assert!(
            e.effects[0].says.contains("dependency of rpcrdma"),
            "{:?}",
            e.effects
        );
        assert_eq!(
            classify_install("x", "/opt/vendor/load.sh"),
            InstallKind::Opaque
        );
        assert_eq!(
            classify_install("x", "/bin/true; modprobe y"),
            InstallKind::Opaque
        );
    }

    #[test]
    fn config_alias_wins_and_blacklist_then_applies() {
        let c = config("alias xprt* off\nblacklist off\n");
        let e = explain_request(&c, &FakeIndex, "xprtrdma");
        assert!(matches!(e.lookup, Lookup::ConfigAlias { .. }));
        assert_eq!(e.targets, vec!["off"]);
        assert!(!e.loads("rpcrdma"));
        let c = config("alias rpcrdma nvidia_fs\n");
        let e = explain_request(&c, &FakeIndex, "rpcrdma");
        assert!(e.loads("nvidia_fs") && !e.loads("rpcrdma"));
    }

    #[test]
    fn config_alias_patterns_match_as_fnmatch_does() {
        // `[^…]` negates and a backslash escapes, as in modules.alias: one matcher for both.
        for pattern in ["xprtrdm[^x]", "xprtrdm[!x]", "xprtrdm\\a", "xprt*"] {
            let c = config(&format!("alias {pattern} off\n"));
            let e = explain_request(&c, &FakeIndex, "xprtrdma");
            assert_eq!(e.targets, vec!["off"], "{pattern}");
        }
        for pattern in ["xprtrdm[^a]", "xprtrdm\\", "xprtrdma\\*"] {
            let c = config(&format!("alias {pattern} off\n"));
            let e = explain_request(&c, &FakeIndex, "xprtrdma");
            assert!(e.loads("rpcrdma"), "{pattern}");
        }
    }

    #[test]
    fn softdeps_and_options_are_reported_in_order() {
        let c = config("options rpcrdma max_requests=64\nsoftdep rpcrdma pre: nvidia_fs\noptions rpcrdma dbg=1\n");
        let e = explain_request(&c, &FakeIndex, "rpcrdma");
        let order: Vec<&str> = e.steps.iter().map(|s| s.module.as_str()).collect();
        assert_eq!(order, vec!["nvidia_fs", "ib_core", "sunrpc", "rpcrdma"]);
        let target = e.steps.last().unwrap();
        let opts: Vec<&str> = target.options.iter().map(|(o, _)| o.as_str()).collect();
        assert_eq!(opts, vec!["max_requests=64", "dbg=1"]);
        let lines: Vec<usize> = e.effects.iter().map(|x| x.origin.line).collect();
        assert_eq!(lines, vec![1, 2, 3]);
    }

    #[test]
    fn install_line_alone_makes_a_name_known() {
        let c = config("install gds_helper /sbin/modprobe nvidia_fs\n");
        let e = explain_request(&c, &FakeIndex, "gds-helper");
        assert!(matches!(e.lookup, Lookup::InstallLine { .. }));
        assert!(matches!(
            e.steps[0].outcome,
            ModuleOutcome::Replaced {
                kind: InstallKind::Opaque,
                ..
            }
        ));
        let e = explain_request(&config(""), &FakeIndex, "nothing_here");
        assert_eq!(e.lookup, Lookup::NotFound);
        assert!(e.steps.is_empty());
    }
}
