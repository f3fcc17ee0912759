//! Switch port numbers: handed out to instances' interfaces (and to peers
//! in the daemon's process), given back when they detach, each with its
//! name `TENANT/INSTANCE/IFACE`.

use std::collections::HashMap;

/// Port numbers in use and free.
pub(crate) struct PortNumbers {
    /// The next number never used.
    next: u32,
    /// Numbers given back, used again first.
    free: Vec<u16>,
    /// Number → name.
    names: HashMap<u16, String>,
    /// One past the largest number.
    end: u32,
}

impl PortNumbers {
    /// Numbers 1 to `end - 1`.
    pub(crate) fn new(end: u32) -> PortNumbers {
        PortNumbers {
            next: 1,
            free: Vec::new(),
            names: HashMap::new(),
            end,
        }
    }

    /// A number for `name`; `None` when all are in use.
    pub(crate) fn take(&mut self, name: String) -> Option<u16> {
        let id = match self.free.pop() {
            Some(id) => id,
            None if self.next < self.end => {
                self.next += 1;
                (self.next - 1) as u16
            }
            None => return None,
        };
        self.names.insert(id, name);
        Some(id)
    }

    /// Gives `id` back.
    pub(crate) fn give_back(&mut self, id: u16) {
        if self.names.remove(&id).is_some() {
            self.free.push(id);
        }
    }

    /// The number of a port name.
    pub(crate) fn named(&self, name: &str) -> Option<u16> {
        self.names
            .iter()
            .find(|(_, n)| n.as_str() == name)
            .map(|(k, _)| *k)
    }

    /// The name of port `id`.
    pub(crate) fn name(&self, id: u16) -> Option<&str> {
        self.names.get(&id).map(String::as_str)
    }

    /// Every port in use: (number, name).
    pub(crate) fn all(&self) -> Vec<(u16, String)> {
        self.names.iter().map(|(k, v)| (*k, v.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_reused_and_run_out() {
        let mut p = PortNumbers::new(4);
        assert_eq!(p.take("a/x/eth0".into()), Some(1));
        assert_eq!(p.take("a/x/eth1".into()), Some(2));
        assert_eq!(p.take("b/y/eth0".into()), Some(3));
        assert_eq!(p.take("c".into()), None);
        assert_eq!(p.named("a/x/eth1"), Some(2));
        assert_eq!(p.name(3), Some("b/y/eth0"));
        p.give_back(2);
        p.give_back(2);
        assert_eq!(p.name(2), None);
        assert_eq!(p.take("c".into()), Some(2));
        assert_eq!(p.take("d".into()), None);
        let mut all = p.all();
        all.sort();
        assert_eq!(all.len(), 3);
        assert_eq!(all[1], (2, "c".to_string()));
    }
}
