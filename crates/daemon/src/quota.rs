//! Per-tenant quotas: what a tenant's instances may ask for, together
//! (memory, CPU shares, instances, switch ports) and each (tasks), which
//! loopback ports their `ControlSocket`s may listen on, and how many
//! connections those sockets serve at once. The admin sets them
//! (`PUT /v1/tenants/NAME/quota`, `pronto tenant quota`); a tenant without
//! one gets [`Quota::defaults`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The lowest port a `ControlSocket` may listen on: below it are the
/// host's services (SSH, DNS, HTTP, ...).
pub const MIN_CONTROL_PORT: u16 = 1024;

/// The most tasks a tenant may give one instance (the kernel's largest
/// `pid_max`).
pub const MAX_PIDS: u64 = 4 << 20;

/// The most memory a quota may name (1 PiB): sums of instances' limits
/// stay far from overflowing.
pub const MAX_MEMORY: u64 = 1 << 50;

/// The most CPUs a quota may name.
pub const MAX_CPU: f64 = 4096.0;

/// A range of TCP ports, `FIRST-LAST`, both included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    /// The first port.
    pub first: u16,
    /// The last port.
    pub last: u16,
}

impl PortRange {
    /// Whether `port` is in the range.
    pub fn contains(&self, port: u16) -> bool {
        (self.first..=self.last).contains(&port)
    }

    /// The ports, in order.
    pub fn ports(&self) -> impl Iterator<Item = u16> {
        self.first..=self.last
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

impl std::str::FromStr for PortRange {
    type Err = String;

    /// `20000-20999` (or one port), none below [`MIN_CONTROL_PORT`].
    fn from_str(s: &str) -> Result<PortRange, String> {
        let bad = || format!("`{s}`: expected ports FIRST-LAST, such as 20000-20999");
        let (a, b) = s.trim().split_once('-').unwrap_or((s.trim(), s.trim()));
        let first: u16 = a.trim().parse().map_err(|_| bad())?;
        let last: u16 = b.trim().parse().map_err(|_| bad())?;
        if first > last {
            return Err(format!("`{s}`: the first port is after the last"));
        }
        if first < MIN_CONTROL_PORT {
            return Err(format!(
                "`{s}`: ports below {MIN_CONTROL_PORT} belong to the host's services; use \
                 {MIN_CONTROL_PORT} or above"
            ));
        }
        Ok(PortRange { first, last })
    }
}

impl Serialize for PortRange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PortRange {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PortRange, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// What a tenant's instances may have.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    /// Instances at once.
    pub instances: u32,
    /// Memory limits of all its instances together, bytes (an instance
    /// that names none counts with the daemon's default).
    pub memory: u64,
    /// CPU shares of all its instances together (an instance that names
    /// none counts as one CPU: its router runs on one thread).
    pub cpu: f64,
    /// The most tasks (processes and threads) of one instance.
    pub pids: u64,
    /// Switch ports (interfaces) of all its instances together.
    pub interfaces: u32,
    /// The loopback ports its `ControlSocket(TCP, PORT)`s may listen on.
    pub control_ports: PortRange,
    /// Connections its control sockets serve at once, all together.
    pub control_connections: u32,
}

impl Quota {
    /// A tenant's quota until the admin sets one: 64 instances, 4 GiB, 64
    /// CPUs, 64 tasks per instance, 256 interfaces, the daemon's control
    /// ports, 16 control connections.
    pub fn defaults(control_ports: PortRange) -> Quota {
        Quota {
            instances: 64,
            memory: 4 << 30,
            cpu: 64.0,
            pids: 64,
            interfaces: 256,
            control_ports,
            control_connections: 16,
        }
    }

    /// Applies the fields of `patch` (a JSON object; fields left out keep
    /// their value). On error: the message and the field to blame.
    pub fn apply(&mut self, patch: &Map<String, Value>) -> Result<(), (String, String)> {
        let mut next = self.clone();
        for (k, v) in patch {
            let field = k.clone();
            let err = |m: String| (format!("{k}: {m}"), field.clone());
            let count = |max: u64| -> Result<u64, (String, String)> {
                v.as_u64()
                    .filter(|n| *n <= max)
                    .ok_or_else(|| err(format!("{v} is not a count from 0 to {max}")))
            };
            match k.as_str() {
                "instances" => next.instances = count(100_000)? as u32,
                "interfaces" => next.interfaces = count(65_535)? as u32,
                "control_connections" => next.control_connections = count(65_535)? as u32,
                "pids" => {
                    next.pids = count(MAX_PIDS)?;
                    if next.pids == 0 {
                        return Err(err("at least 1 task".into()));
                    }
                }
                "memory" => {
                    let m = crate::api::parse_size(v).map_err(err)?;
                    if m > MAX_MEMORY {
                        return Err(err(format!("at most {MAX_MEMORY} bytes")));
                    }
                    next.memory = m;
                }
                "cpu" => {
                    next.cpu = v
                        .as_f64()
                        .filter(|c| *c > 0.0 && *c <= MAX_CPU)
                        .ok_or_else(|| {
                            err(format!(
                                "{v} is not a number of CPUs (0 < cpu <= {MAX_CPU})"
                            ))
                        })?;
                }
                "control_ports" => {
                    let s = v
                        .as_str()
                        .ok_or_else(|| err(format!("{v} is not a port range (\"20000-20999\")")))?;
                    next.control_ports = s.parse().map_err(err)?;
                }
                _ => {
                    return Err((
                        format!(
                            "unknown field `{k}`; a quota has instances, memory, cpu, pids, \
                             interfaces, control_ports and control_connections"
                        ),
                        field,
                    ))
                }
            }
        }
        *self = next;
        Ok(())
    }
}

/// What a tenant's instances have now.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Usage {
    /// Instances.
    pub instances: u32,
    /// Their memory limits together, bytes.
    pub memory: u64,
    /// Their CPU shares together.
    pub cpu: f64,
    /// Their switch ports.
    pub interfaces: u32,
    /// Open control socket connections.
    pub control_connections: usize,
}

/// What one more instance would add.
#[derive(Clone, Debug, PartialEq)]
pub struct Ask {
    /// Its memory limit.
    pub memory: u64,
    /// Its CPU share.
    pub cpu: f64,
    /// Its task limit.
    pub pids: u64,
    /// Its interfaces.
    pub interfaces: u32,
}

/// `n` without a needless `.0`.
pub fn num(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// Checks one more instance of `tenant` against `quota`, given `used`;
/// the refusal names the field and the limit.
pub fn check(
    tenant: &str,
    quota: &Quota,
    used: &Usage,
    ask: &Ask,
) -> Result<(), (String, &'static str)> {
    check_in(tenant, quota, used, ask, "")
}

/// [`check`] of a usage counted over `scope` (` in the cluster`: every
/// node's instances of the tenant), which the refusal says after what is
/// in use.
pub fn check_in(
    tenant: &str,
    quota: &Quota,
    used: &Usage,
    ask: &Ask,
    scope: &str,
) -> Result<(), (String, &'static str)> {
    let raise = "ask the admin to raise it";
    if used.instances >= quota.instances {
        let n = used.instances;
        return Err((
            format!(
                "tenant `{tenant}` has {n} instance{}{scope}, as many as its quota allows; \
                 remove one or {raise}",
                if n == 1 { "" } else { "s" }
            ),
            "instances",
        ));
    }
    if used.memory.saturating_add(ask.memory) > quota.memory {
        return Err((
            format!(
                "memory: {} bytes would take tenant `{tenant}` over its memory quota of {} bytes \
                 ({} in use{scope}); {raise}",
                ask.memory, quota.memory, used.memory
            ),
            "memory",
        ));
    }
    if ask.pids > quota.pids {
        return Err((
            format!(
                "pids: {} is over tenant `{tenant}`'s limit of {} tasks per instance; {raise}",
                ask.pids, quota.pids
            ),
            "pids",
        ));
    }
    // A little slack for shares that do not add up exactly in binary.
    if used.cpu + ask.cpu > quota.cpu + 1e-9 {
        return Err((
            format!(
                "cpu: {} CPUs would take tenant `{tenant}` over its CPU quota of {} ({} in \
                 use{scope}); {raise}",
                num(ask.cpu),
                num(quota.cpu),
                num(used.cpu)
            ),
            "cpu",
        ));
    }
    if used.interfaces.saturating_add(ask.interfaces) > quota.interfaces {
        return Err((
            format!(
                "interfaces: {} more would take tenant `{tenant}` over its quota of {} switch \
                 ports ({} in use{scope}); {raise}",
                ask.interfaces, quota.interfaces, used.interfaces
            ),
            "interfaces",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn range() -> PortRange {
        "20000-20999".parse().expect("range")
    }

    #[test]
    fn port_ranges_parse_and_stay_off_the_hosts_ports() {
        assert_eq!(
            range(),
            PortRange {
                first: 20000,
                last: 20999
            }
        );
        assert_eq!(range().to_string(), "20000-20999");
        assert_eq!(
            "2000".parse(),
            Ok(PortRange {
                first: 2000,
                last: 2000
            })
        );
        assert!(range().contains(20999) && !range().contains(22));
        assert_eq!(
            "80-90".parse::<PortRange>(),
            Err(
                "`80-90`: ports below 1024 belong to the host's services; use 1024 or above".into()
            )
        );
        assert!("30000-20000".parse::<PortRange>().is_err());
        assert!("x-2".parse::<PortRange>().is_err());
    }

    #[test]
    fn a_patch_changes_what_it_names_or_nothing() {
        let mut q = Quota::defaults(range());
        q.apply(
            json!({"instances": 2, "memory": "64M", "control_ports": "21000-21009"})
                .as_object()
                .expect("object"),
        )
        .expect("good");
        assert_eq!((q.instances, q.memory), (2, 64 << 20));
        assert_eq!(q.control_ports.to_string(), "21000-21009");
        let before = q.clone();
        for (patch, field) in [
            (json!({"instances": 3, "pids": 0}), "pids"),
            (json!({"cpu": 0}), "cpu"),
            (json!({"memory": 9223372036854775807u64}), "memory"),
            (json!({"control_ports": 80}), "control_ports"),
            (json!({"disk": 1}), "disk"),
        ] {
            let e = q
                .apply(patch.as_object().expect("object"))
                .expect_err("refused");
            assert_eq!(e.1, field, "{}", e.0);
            assert_eq!(q, before, "a refused patch changes nothing");
        }
    }

    #[test]
    fn checks_name_the_field_and_the_limit() {
        let mut q = Quota::defaults(range());
        q.instances = 2;
        let used = Usage {
            instances: 1,
            memory: 32 << 20,
            cpu: 1.0,
            interfaces: 2,
            control_connections: 0,
        };
        let ask = Ask {
            memory: 32 << 20,
            cpu: 0.5,
            pids: 8,
            interfaces: 1,
        };
        assert_eq!(check("t", &q, &used, &ask), Ok(()));
        let full = Usage {
            instances: 2,
            ..used.clone()
        };
        assert_eq!(
            check("t", &q, &full, &ask).expect_err("full").1,
            "instances"
        );
        let e = check(
            "t",
            &q,
            &used,
            &Ask {
                memory: 1 << 63,
                ..ask.clone()
            },
        )
        .expect_err("memory");
        assert_eq!(
            e.0,
            "memory: 9223372036854775808 bytes would take tenant `t` over its memory quota of \
             4294967296 bytes (33554432 in use); ask the admin to raise it"
        );
        assert_eq!(
            check(
                "t",
                &q,
                &used,
                &Ask {
                    pids: 65,
                    ..ask.clone()
                }
            )
            .expect_err("pids")
            .1,
            "pids"
        );
        let e = check(
            "t",
            &q,
            &used,
            &Ask {
                cpu: 63.5,
                ..ask.clone()
            },
        )
        .expect_err("cpu");
        assert_eq!(
            e.0,
            "cpu: 63.5 CPUs would take tenant `t` over its CPU quota of 64 (1 in use); ask the \
             admin to raise it"
        );
        assert_eq!(
            check(
                "t",
                &q,
                &used,
                &Ask {
                    interfaces: 255,
                    ..ask
                }
            )
            .expect_err("ports")
            .1,
            "interfaces"
        );
    }
}
