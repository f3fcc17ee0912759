//! What names the API accepts: tenants, instances, interfaces; and the
//! per-name lock that makes create, delete and reconfigure of one instance
//! happen one at a time.

use std::collections::HashSet;
use std::sync::{Condvar, Mutex};

use crate::failure::Failure;
use crate::store::IfaceSpec;

/// A valid tenant name: 1 to 31 of `a-z 0-9 -`, starting with a letter or
/// digit.
pub fn check_tenant(name: &str) -> Result<(), Failure> {
    let ok = !name.is_empty()
        && name.len() <= 31
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Failure::BadRequest(
            format!("tenant name `{name}`: use 1 to 31 of a-z, 0-9 and `-`, not starting with `-`"),
            Some("name"),
        ))
    }
}

/// A valid instance name: 1 to 32 of `A-Z a-z 0-9 _ . -`, not starting
/// with `.` or `-`.
pub fn check_name(name: &str) -> Result<(), Failure> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && !name.starts_with('.')
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Failure::BadRequest(
            format!(
                "instance name `{name}`: use 1 to 32 of A-Z, a-z, 0-9, `_`, `.` and `-`, not \
                 starting with `.` or `-`"
            ),
            Some("name"),
        ))
    }
}

/// A valid group (a chain's name): what an instance name may be, the
/// error naming the field `group`.
pub fn check_group(group: &str) -> Result<(), Failure> {
    check_name(group).map_err(|_| {
        Failure::BadRequest(
            format!(
                "group `{group}`: use 1 to 32 of A-Z, a-z, 0-9, `_`, `.` and `-`, not starting \
                 with `.` or `-` (a chain's name, as an instance name)"
            ),
            Some("group"),
        )
    })
}

/// Valid interfaces: names of 1 to 15 of `A-Z a-z 0-9 _ -`, each once,
/// MACs written as MACs.
pub fn check_ifaces(list: &[IfaceSpec]) -> Result<(), Failure> {
    let mut seen = Vec::new();
    for i in list {
        let ok = !i.name.is_empty()
            && i.name.len() <= 15
            && i.name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(Failure::BadRequest(
                format!(
                    "interface name `{}`: use 1 to 15 of A-Z, a-z, 0-9, `_` and `-`",
                    i.name
                ),
                Some("interfaces"),
            ));
        }
        if let Some(m) = &i.mac {
            if pronto_switch::control::parse_mac(m).is_none() {
                return Err(Failure::BadRequest(
                    format!(
                        "interface {}: `{m}` is not a MAC address (02:00:00:00:00:01)",
                        i.name
                    ),
                    Some("interfaces"),
                ));
            }
        }
        if let Some(ip) = &i.ip {
            if ip.parse::<std::net::IpAddr>().is_err() {
                return Err(Failure::BadRequest(
                    format!(
                        "interface {}: `{ip}` is not an IPv4 or IPv6 address (10.0.0.1, fd00::1)",
                        i.name
                    ),
                    Some("interfaces"),
                ));
            }
            if i.mac.is_none() {
                return Err(Failure::BadRequest(
                    format!(
                        "interface {}: an `ip` needs a `mac` (the switch answers ARP or \
                         Neighbor Solicitations for the address with it)",
                        i.name
                    ),
                    Some("interfaces"),
                ));
            }
        }
        if seen.contains(&&i.name) {
            return Err(Failure::BadRequest(
                format!("interface {} is listed twice", i.name),
                Some("interfaces"),
            ));
        }
        seen.push(&i.name);
    }
    Ok(())
}

/// Names being worked on: an operation on an instance holds its name
/// until it has answered, so two operations on one name never overlap
/// (operations on different names do).
#[derive(Default)]
pub(crate) struct NameLocks {
    held: Mutex<HashSet<String>>,
    freed: Condvar,
}

/// A held name; released when dropped.
pub(crate) struct NameGuard<'a> {
    locks: &'a NameLocks,
    key: String,
}

impl NameLocks {
    /// Waits until no one holds `key`, then holds it.
    pub(crate) fn lock(&self, key: &str) -> NameGuard<'_> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while held.contains(key) {
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        held.insert(key.to_string());
        NameGuard {
            locks: self,
            key: key.to_string(),
        }
    }
}

impl Drop for NameGuard<'_> {
    fn drop(&mut self) {
        self.locks
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
        self.locks.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn names_are_checked() {
        assert!(check_tenant("acme-2").is_ok());
        for bad in ["", "-a", "Acme", "a.b", &"a".repeat(32)] {
            assert_eq!(
                check_tenant(bad).expect_err(bad),
                Failure::BadRequest(
                    format!(
                        "tenant name `{bad}`: use 1 to 31 of a-z, 0-9 and `-`, not starting with \
                         `-`"
                    ),
                    Some("name")
                )
            );
        }
        assert!(check_name("fw_1.a-b").is_ok());
        for bad in ["", ".a", "-a", "a/b", "a b", &"a".repeat(33)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        let i = |n: &str, m: Option<&str>| IfaceSpec {
            name: n.into(),
            mac: m.map(str::to_string),
            ip: None,
            broadcast: None,
        };
        assert!(check_ifaces(&[i("eth0", Some("02:00:00:00:00:01")), i("eth1", None)]).is_ok());
        for bad in [
            vec![i("eth0", None), i("eth0", None)],
            vec![i("a.b", None)],
            vec![i("eth0", Some("nope"))],
        ] {
            assert!(matches!(
                check_ifaces(&bad),
                Err(Failure::BadRequest(_, Some("interfaces")))
            ));
        }
    }

    #[test]
    fn one_name_is_worked_on_by_one_operation_at_a_time() {
        let locks = Arc::new(NameLocks::default());
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (locks, inside, most) = (locks.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let _g = locks.lock("t.a");
                        let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(n, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        // Another name is not held up meanwhile.
        drop(locks.lock("t.b"));
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
        assert!(locks.held.lock().expect("lock").is_empty());
    }
}
