//! Predicts the loader's answer on a kernel built without CONFIG_MODVERSIONS (Debian from 6.18):
//! no symbol CRC is compared, so what remains is the vermagic, compared whole
//! (`same_magic()` in `kernel/module/version.c` skips the release only where CRCs vouch for
//! it), and, with CONFIG_DEBUG_INFO_BTF_MODULES on and CONFIG_MODULE_ALLOW_BTF_MISMATCH off,
//! the module's split BTF, which the kernel validates against its own and refuses when it does
//! not (`btf_module_notify()`: "failed to validate module [%s] BTF"). A split BTF with a
//! distilled base (every out-of-tree build on Debian 13) is relocated onto the kernel's types by
//! name instead, which [`btf_relocate`] repeats.
//!
//! Pure: the caller gives the module's vermagic and BTF summary, and what it read of the
//! kernel. Only the refusals the kernel certainly makes are called refusals; a module that is
//! in range but built against another base is "likely refused"; where nothing decides the
//! answer says so, with what was seen.

use serde::Serialize;

use std::sync::Arc;

use super::btf::{fit, BaseBtf, BtfFit, ModuleBtf};
use super::btf_relocate::{self, DistilledBase, Relocation};

/// The vermagic words CONFIG_* options add after the release (`include/linux/vermagic.h`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VermagicConfig {
    pub smp: bool,
    /// `preempt`, `preempt_rt` or none.
    pub preempt: Option<&'static str>,
    pub mod_unload: bool,
    pub modversions: bool,
}

impl VermagicConfig {
    /// The kernel's vermagic for `release` on an architecture that adds no word of its own
    /// (x86_64) and without RANDSTRUCT.
    pub fn vermagic(&self, release: &str) -> String {
        let mut words = vec![release];
        words.extend(self.smp.then_some("SMP"));
        words.extend(self.preempt);
        words.extend(self.mod_unload.then_some("mod_unload"));
        words.extend(self.modversions.then_some("modversions"));
        words.join(" ")
    }
}

/// What decides whether the kernel validates a module's BTF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum BtfPolicy {
    /// CONFIG_DEBUG_INFO_BTF_MODULES on, CONFIG_MODULE_ALLOW_BTF_MISMATCH off: a module whose
    /// BTF does not validate is refused.
    Enforced { evidence: String },
    /// The kernel does not refuse for BTF (mismatch allowed, or module BTF not parsed).
    NotEnforced { evidence: String },
    /// No configuration says.
    Unknown,
}

/// What was read of the kernel for the prediction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CrclessKernel {
    pub release: Option<String>,
    /// The vermagic its configuration gives, where it gives all of it.
    pub vermagic: Option<String>,
    /// Where `vermagic` came from (`/boot/config-…`).
    pub vermagic_from: String,
    pub btf_policy: BtfPolicy,
    /// `/sys/kernel/btf/vmlinux`, summarised, or why it could not be read; `None` where it is
    /// not there.
    pub base: Option<Result<BaseBtf, String>>,
    /// That BTF as read, for relocating a module's distilled base onto it; `None` where it was
    /// not read or could not be summarised.
    #[serde(skip)]
    pub btf: Option<Arc<Vec<u8>>>,
}

/// The prediction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CrclessVerdict {
    /// The kernel refuses it.
    Refused { reason: String },
    /// Built in range against another base: the kernel almost always refuses it.
    LikelyRefused { reason: String },
    /// Every check the kernel makes of it is seen to pass.
    Loads { evidence: String },
    /// Something the kernel checks could not be seen.
    Undecided { reason: String },
}

impl CrclessVerdict {
    pub fn refuses_load(&self) -> bool {
        matches!(self, CrclessVerdict::Refused { .. })
    }
}

/// Judges a module with `vermagic` and `btf` (its `.BTF`, or why it could not be read) on
/// `kernel`; `name` is the module's name as the kernel prints it.
pub fn judge(
    name: &str,
    vermagic: Option<&str>,
    btf: Option<&Result<ModuleBtf, String>>,
    kernel: &CrclessKernel,
) -> CrclessVerdict {
    let Some(vermagic) = vermagic else {
        return CrclessVerdict::Refused {
            reason: format!(
                "it has no vermagic: the kernel refuses it (`{name}: no version magic, tainting kernel` only with CONFIG_MODULE_FORCE_LOAD)"
            ),
        };
    };
    let vermagic_words = match (&kernel.vermagic, &kernel.release) {
        (Some(expected), _) if expected.split_whitespace().eq(vermagic.split_whitespace()) => {
            format!("vermagic `{vermagic}` is this kernel's (per {})", kernel.vermagic_from)
        }
        (Some(expected), _) => {
            return CrclessVerdict::Refused {
                reason: format!(
                    "its vermagic `{vermagic}` is not this kernel's `{expected}` (per {}): the kernel refuses it (`{name}: version magic '{vermagic}' should be '{expected}'`)",
                    kernel.vermagic_from
                ),
            }
        }
        (None, Some(release)) if vermagic.split_whitespace().next() != Some(release) => {
            return CrclessVerdict::Refused {
                reason: format!(
                    "its vermagic `{vermagic}` is for another release than the running {release}: the kernel refuses it (`{name}: version magic … should be …`)"
                ),
            }
        }
        (None, Some(release)) => {
            return CrclessVerdict::Undecided {
                reason: format!(
                    "its vermagic names the running release {release}, but the rest of this kernel's vermagic is not known (no complete kernel configuration), and the kernel compares all of it"
                ),
            }
        }
        (None, None) => {
            return CrclessVerdict::Undecided {
                reason: "the running kernel's release is not known, so its vermagic cannot be compared".into(),
            }
        }
    };
    let btf = match btf {
        None => {
            return CrclessVerdict::Loads {
                evidence: format!(
                    "{vermagic_words}; the module carries no BTF (built where no vmlinux was at hand, so kbuild made none), so the kernel checks nothing more of its ABI"
                ),
            }
        }
        Some(Err(e)) => {
            return match &kernel.btf_policy {
                BtfPolicy::NotEnforced { evidence } => CrclessVerdict::Loads {
                    evidence: format!("{vermagic_words}; its .BTF is unreadable ({e}) but the kernel does not refuse for BTF ({evidence})"),
                },
                _ => CrclessVerdict::Undecided {
                    reason: format!("{vermagic_words}, but its .BTF could not be read ({e}), which the kernel validates"),
                },
            }
        }
        Some(Ok(b)) => b,
    };
    let evidence = match &kernel.btf_policy {
        BtfPolicy::NotEnforced { evidence } => {
            return CrclessVerdict::Loads {
                evidence: format!(
                    "{vermagic_words}; the kernel does not refuse a module for its BTF ({evidence})"
                ),
            }
        }
        BtfPolicy::Unknown => {
            return CrclessVerdict::Undecided {
                reason: format!("{vermagic_words}, but whether the kernel refuses a module whose BTF does not validate (CONFIG_MODULE_ALLOW_BTF_MISMATCH, CONFIG_DEBUG_INFO_BTF_MODULES) is not known"),
            }
        }
        BtfPolicy::Enforced { evidence } => evidence,
    };
    let base = match &kernel.base {
        Some(Ok(base)) => base,
        Some(Err(e)) => {
            return CrclessVerdict::Undecided {
                reason: format!("{vermagic_words}; the kernel validates the module's BTF ({evidence}) against /sys/kernel/btf/vmlinux, which could not be read: {e}"),
            }
        }
        None => {
            return CrclessVerdict::Undecided {
                reason: format!("{vermagic_words}; the kernel validates the module's BTF ({evidence}) against /sys/kernel/btf/vmlinux, which is not there to compare with"),
            }
        }
    };
    if let Some(distilled) = &btf.distilled {
        return relocated(name, &vermagic_words, evidence, distilled, kernel);
    }
    let refusal = format!("`failed to validate module [{name}] BTF: -22`");
    match fit(btf, base) {
        BtfFit::OutOfRange(why) => CrclessVerdict::Refused {
            reason: format!("its BTF does not fit this kernel's ({why}): the kernel refuses it ({refusal}; {evidence})"),
        },
        BtfFit::OtherBase { built, running } => CrclessVerdict::LikelyRefused {
            reason: format!("its BTF was built against a kernel BTF of {built} bytes of names, this kernel's has {running}: another build, whose types the kernel almost always fails to validate ({refusal}; {evidence})"),
        },
        BtfFit::Consistent { built } => CrclessVerdict::Loads {
            evidence: format!("{vermagic_words}; its BTF was built against a kernel BTF of this kernel's size ({built} bytes of names) and refers to no type beyond this kernel's {} and its own {} ({evidence})", base.types, btf.own_types),
        },
        BtfFit::InRange => CrclessVerdict::Undecided {
            reason: format!("{vermagic_words}; its BTF is in range of this kernel's, but which kernel it was built against is not told ({evidence})"),
        },
    }
}

/// The verdict for a module whose BTF has a distilled base: what the kernel's relocation of it
/// onto `kernel`'s types gives ([`btf_relocate`]).
fn relocated(
    name: &str,
    vermagic_words: &str,
    evidence: &str,
    distilled: &Result<DistilledBase, String>,
    kernel: &CrclessKernel,
) -> CrclessVerdict {
    let base = match distilled {
        Ok(base) => base,
        Err(e) => {
            return CrclessVerdict::Undecided {
                reason: format!("{vermagic_words}, but its distilled base could not be read ({e}), which the kernel relocates onto its own types by name ({evidence})"),
            }
        }
    };
    let Some(btf) = &kernel.btf else {
        return CrclessVerdict::Undecided {
            reason: format!("{vermagic_words}; the kernel relocates the module's distilled base onto its own types by name ({evidence}), and those were not read"),
        };
    };
    let relocation = match btf_relocate::relocate(base, btf) {
        Ok(r) => r,
        Err(e) => {
            return CrclessVerdict::Undecided {
                reason: format!("{vermagic_words}; the kernel relocates the module's distilled base onto its own types by name ({evidence}), and /sys/kernel/btf/vmlinux could not be read for it: {e}"),
            }
        }
    };
    match relocation {
        Relocation::Maps { types } => CrclessVerdict::Loads {
            evidence: format!("{vermagic_words}; its BTF has a distilled base (.BTF.base), and each of its {types} types maps by name to exactly one of this kernel's, as the kernel relocates it ({evidence})"),
        },
        Relocation::Fails { message, errno } => CrclessVerdict::Refused {
            reason: format!("its distilled base (.BTF.base) does not relocate onto this kernel's BTF: the kernel refuses it (`{message}`, then `failed to validate module [{name}] BTF: {errno}`; {evidence})"),
        },
        Relocation::Depends { reason } => CrclessVerdict::Undecided {
            reason: format!("{vermagic_words}; the kernel relocates its distilled base (.BTF.base) onto its own types by name ({evidence}), and {reason}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmod::btf::FrwrGeneration;
    use crate::kmod::btf_records::testing::{blob, rec};
    use crate::kmod::btf_relocate::DistilledType;

    const VERMAGIC_73: &str = "7.3.4+deb13-amd64 SMP preempt mod_unload";

    fn debian_7x() -> VermagicConfig {
        VermagicConfig {
            smp: true,
            preempt: Some("preempt"),
            mod_unload: true,
            modversions: false,
        }
    }

    fn kernel(policy: BtfPolicy, base: Option<Result<BaseBtf, String>>) -> CrclessKernel {
        CrclessKernel {
            release: Some("7.3.4+deb13-amd64".into()),
            vermagic: Some(debian_7x().vermagic("7.3.4+deb13-amd64")),
            vermagic_from: "/usr/lib/modules/7.3.4+deb13-amd64/config".into(),
            btf_policy: policy,
            base,
            btf: None,
        }
    }

    fn enforced() -> BtfPolicy {
        BtfPolicy::Enforced {
            evidence: "CONFIG_MODULE_ALLOW_BTF_MISMATCH is not set".into(),
        }
    }

    /// Debian 7.3.4's rpcrdma BTF and vmlinux BTF, as measured.
    fn btf_73() -> ModuleBtf {
        ModuleBtf {
            size: 191_985,
            own_types: 4024,
            own_str_len: 41_537,
            max_type_ref: 131_448,
            max_name_off: 2_359_060,
            base_str_len: Some(2_317_542),
            distilled: None,
            frwr: FrwrGeneration::XdrCursor,
        }
    }
    const BASE_73: BaseBtf = BaseBtf {
        types: 127_424,
        str_len: 2_317_542,
    };
    const BASE_72: BaseBtf = BaseBtf {
        types: 124_639,
        str_len: 2_273_004,
    };

    #[test]
    fn the_vermagic_follows_the_configuration() {
        assert_eq!(debian_7x().vermagic("7.3.4+deb13-amd64"), VERMAGIC_73);
        let with = VermagicConfig {
            modversions: true,
            ..debian_7x()
        };
        assert_eq!(
            with.vermagic("6.12.117+deb13-amd64"),
            "6.12.117+deb13-amd64 SMP preempt mod_unload modversions"
        );
    }

    #[test]
    fn the_kernels_own_module_loads_and_one_of_another_build_does_not() {
        let k = kernel(enforced(), Some(Ok(BASE_73)));
        let own = judge("rpcrdma", Some(VERMAGIC_73), Some(&Ok(btf_73())), &k);
        let CrclessVerdict::Loads { evidence } = &own else {
            panic!("{own:?}")
        };
        assert!(evidence.contains("2317542 bytes of names"), "{evidence}");

        let on_72 = CrclessKernel {
            base: Some(Ok(BASE_72)),
            ..k.clone()
        };
        let v = judge("rpcrdma", Some(VERMAGIC_73), Some(&Ok(btf_73())), &on_72);
        assert!(v.refuses_load(), "{v:?}");
        let mut other = btf_73();
        other.base_str_len = Some(2_300_000);
        let v = judge("rpcrdma", Some(VERMAGIC_73), Some(&Ok(other)), &k);
        assert!(matches!(v, CrclessVerdict::LikelyRefused { .. }), "{v:?}");
        assert!(!v.refuses_load());
    }

    #[test]
    fn without_btf_the_vermagic_decides() {
        let k = kernel(enforced(), None);
        let v = judge("rpcrdma", Some(VERMAGIC_73), None, &k);
        assert!(matches!(v, CrclessVerdict::Loads { .. }), "{v:?}");
        let v = judge(
            "rpcrdma",
            Some("7.2.13+deb14-amd64 SMP preempt mod_unload"),
            None,
            &k,
        );
        let CrclessVerdict::Refused { reason } = v else {
            panic!()
        };
        assert!(
            reason.contains("should be '7.3.4+deb13-amd64 SMP preempt mod_unload'"),
            "{reason}"
        );
    }

    #[test]
    fn nothing_passes_for_lack_of_evidence() {
        let btf = Some(Ok(btf_73()));
        for k in [
            kernel(enforced(), None),
            kernel(enforced(), Some(Err("permission denied".into()))),
            kernel(BtfPolicy::Unknown, Some(Ok(BASE_73))),
            CrclessKernel {
                vermagic: None,
                ..kernel(enforced(), Some(Ok(BASE_73)))
            },
        ] {
            let v = judge("rpcrdma", Some(VERMAGIC_73), btf.as_ref(), &k);
            assert!(matches!(v, CrclessVerdict::Undecided { .. }), "{v:?}");
        }
        let v = judge(
            "nvidia_fs",
            Some(VERMAGIC_73),
            Some(&Ok(distilled())),
            &kernel(enforced(), Some(Ok(BASE_73))),
        );
        assert!(matches!(v, CrclessVerdict::Undecided { .. }), "{v:?}");
        let allowed = BtfPolicy::NotEnforced {
            evidence: "CONFIG_MODULE_ALLOW_BTF_MISMATCH=y".into(),
        };
        let v = judge(
            "rpcrdma",
            Some(VERMAGIC_73),
            btf.as_ref(),
            &kernel(allowed, None),
        );
        assert!(matches!(v, CrclessVerdict::Loads { .. }), "{v:?}");
    }

    /// A module whose BTF has a distilled base of one struct `foo` (16 bytes).
    fn distilled() -> ModuleBtf {
        ModuleBtf {
            base_str_len: None,
            distilled: Some(Ok(DistilledBase {
                types: vec![DistilledType {
                    id: 1,
                    kind: 4,
                    name: "foo".into(),
                    size: 16,
                    kflag: false,
                    int_encoding: 0,
                    embedded: false,
                }],
                invalid: None,
                stray_strings: Vec::new(),
            })),
            ..btf_73()
        }
    }

    /// The kernel's types: a struct `foo` of 16 bytes, or only a pointer of that name.
    fn with_foo(a_struct: bool) -> CrclessKernel {
        let foo = if a_struct {
            rec(1, 4, 0, 16, &[])
        } else {
            rec(1, 2, 0, 0, &[])
        };
        CrclessKernel {
            btf: Some(Arc::new(blob(&foo, b"\0foo\0"))),
            ..kernel(enforced(), Some(Ok(BASE_73)))
        }
    }

    #[test]
    fn a_distilled_base_is_judged_by_its_relocation() {
        let m = Some(Ok(distilled()));
        let v = judge("nvidia_fs", Some(VERMAGIC_73), m.as_ref(), &with_foo(true));
        let CrclessVerdict::Loads { evidence } = &v else {
            panic!("{v:?}")
        };
        assert!(
            evidence.contains("each of its 1 types maps by name"),
            "{evidence}"
        );
        let v = judge("nvidia_fs", Some(VERMAGIC_73), m.as_ref(), &with_foo(false));
        let CrclessVerdict::Refused { reason } = &v else {
            panic!("{v:?}")
        };
        assert!(
            reason.contains("`distilled base BTF type 'foo' [1] is not mapped to base BTF id`, then `failed to validate module [nvidia_fs] BTF: -22`"),
            "{reason}"
        );
        let unreadable = Some(Ok(ModuleBtf {
            distilled: Some(Err(".BTF.base: BTF magic is 0x0000, not 0xeb9f".into())),
            ..distilled()
        }));
        let v = judge(
            "nvidia_fs",
            Some(VERMAGIC_73),
            unreadable.as_ref(),
            &with_foo(true),
        );
        assert!(matches!(v, CrclessVerdict::Undecided { .. }), "{v:?}");
    }
}
