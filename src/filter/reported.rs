//! The programs of a run that reports what it refused (rules.rs, through
//! `#[path]`, so build.rs reads them too).

use super::{Arch, Cond, Rule, Set, rules};

/// The listener's program of a run that reports what it refused (issue
/// 44): every rule of its unix filter, of the observe filter where the
/// run is observed and of the namespaces filter where nesting is not
/// allowed, each answered with SECCOMP_RET_USER_NOTIF. The stub answers
/// a refused call with the errno today's programs give it (it runs them
/// on the call: report.rs) and counts it. The kernel takes the strictest
/// answer of a chain, and EPERM outranks a notification, so no other
/// program of the chain may refuse what this one reports: the namespaces
/// filter beside it is [`Set::Clone3`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reported {
    /// `Unix`, `UnixCapabilityFree`, `UnixOwn`, `UnixOwnCapabilityFree`,
    /// `UnixKernel` or `UnixKernelCapabilityFree`.
    pub unix: Set,
    pub observe: bool,
    /// `SRT_ALLOW_NESTED_USERNS=1`: no namespaces rules.
    pub nested: bool,
}

impl Reported {
    pub fn all() -> Vec<Reported> {
        let mut all = Vec::new();
        for unix in [
            Set::Unix,
            Set::UnixCapabilityFree,
            Set::UnixOwn,
            Set::UnixOwnCapabilityFree,
            Set::UnixKernel,
            Set::UnixKernelCapabilityFree,
        ] {
            for observe in [false, true] {
                for nested in [false, true] {
                    all.push(Reported {
                        unix,
                        observe,
                        nested,
                    });
                }
            }
        }
        all
    }

    /// Its name (no formatting: a run looks it up, and the formatting
    /// code would be pages more to fault in).
    pub fn name(self) -> String {
        [
            "reported-",
            self.unix.name(),
            if self.observe { "-observe" } else { "" },
            if self.nested { "-nested" } else { "" },
        ]
        .concat()
    }

    /// Today's programs for the same run, in the order the worker installs
    /// them: what the stub runs on a reported call for its errno.
    pub fn today(self) -> Vec<Set> {
        let mut chain = Vec::new();
        let own = matches!(self.unix, Set::UnixOwn | Set::UnixOwnCapabilityFree);
        match (own, self.observe) {
            (true, true) if self.unix == Set::UnixOwn => chain.push(Set::UnixOwnObserve),
            (true, true) => chain.push(Set::UnixOwnCapabilityFreeObserve),
            (false, true) => chain.extend([Set::Observe, self.unix]),
            (_, false) => chain.push(self.unix),
        }
        if !self.nested {
            chain.push(Set::Namespaces);
        }
        chain
    }

    /// Every rule of [`Reported::today`] but `clone3`'s, notified. Where
    /// two programs name one number (`bind`: the own-sockets policy's and
    /// the observe filter's), the rule without conditions covers both;
    /// two rules that each test bits of one argument (`clone`: the
    /// namespaces filter's new namespaces, the own-sockets policy's
    /// `CLONE_PARENT`) are one rule on either's bits; any other two
    /// conditional rules cannot be one rule, and stop the build.
    pub fn rules(self, arch: Arch) -> Vec<Rule> {
        let mut all: Vec<Rule> = Vec::new();
        for set in self.today() {
            for r in rules(arch, set) {
                match all.iter_mut().find(|o| o.nr == r.nr) {
                    None => all.push(r),
                    Some(o) if o.all_of.is_empty() => {}
                    Some(o) if r.all_of.is_empty() => *o = r,
                    Some(o) => match (o.all_of.as_slice(), r.all_of.as_slice()) {
                        (
                            [Cond::AnyBit { arg, bits }],
                            [
                                Cond::AnyBit {
                                    arg: other,
                                    bits: more,
                                },
                            ],
                        ) if arg == other => {
                            o.all_of = vec![Cond::AnyBit {
                                arg: *arg,
                                bits: bits | more,
                            }];
                        }
                        _ => assert!(
                            o.all_of == r.all_of,
                            "syscall {} has two conditional rules in {}",
                            r.nr,
                            self.name()
                        ),
                    },
                }
            }
        }
        for r in &mut all {
            r.notify = true;
        }
        all
    }
}
