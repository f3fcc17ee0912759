//! The paper's Table 1: common network functions and what they do to
//! packets, usable in a policy as `nf fw = builtin(firewall)`.
//!
//! The table as printed (R read, W write, R/W both, T yes):
//!
//! | NF         | product    | %   | src IP | dst IP | src port | dst port | payload | add/rm | drop |
//! |------------|------------|-----|--------|--------|----------|----------|---------|--------|------|
//! | firewall   | iptables   | 26% | R      | R      | R        | R        |         |        | T    |
//! | ids        | NIDS       | 20% | R      | R      | R        | R        | R       |        |      |
//! | gateway    | Cisco MGX  | 19% | R      | R      |          |          |         |        |      |
//! | lb         | F5, A10    | 10% | R/W    | R/W    | R        | R        |         |        |      |
//! | cache      | Nginx      | 10% | R      |        | R        |          | R       |        |      |
//! | vpn        | OpenVPN    | 7%  | R      | R      |          |          | R/W     | T      |      |
//! | nat        | iptables   |     | R/W    | R/W    | R/W      | R/W      |         |        |      |
//! | proxy      | Squid      |     | R/W    | R/W    |          |          |         |        |      |
//! | compressor | Cisco IOS  |     |        |        |          |          | R/W     |        |      |
//! | shaper     | Linux tc   |     |        |        |          |          |         |        |      |
//! | monitor    | NetFlow    |     | R      | R      | R        | R        |         |        |      |
//!
//! The copy of the paper at hand lost the table's column rules; the cells
//! of the cache and proxy rows were placed by their spacing. The pair
//! shares the paper derives from the table (see the tests of
//! [`crate::analysis`]) come out the same whichever columns the cache's
//! three reads are in.

use crate::profile::{Field, Profile};

/// A row of Table 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin {
    /// The name a policy uses: `builtin(NAME)`.
    pub name: &'static str,
    /// The NF as the paper names it.
    pub title: &'static str,
    /// The product the paper took the row from.
    pub product: &'static str,
    /// Share of the NF among middleboxes of enterprise networks, in
    /// percent (the paper's `%` column; `None` where the paper gives none).
    pub share_percent: Option<u32>,
    /// What the NF does to packets.
    pub profile: Profile,
}

use Field::{DstIp, DstPort, Payload, SrcIp, SrcPort};

const FIVE: [Field; 4] = [SrcIp, DstIp, SrcPort, DstPort];

/// Table 1, in the paper's row order.
pub fn builtins() -> &'static [Builtin] {
    static TABLE: std::sync::OnceLock<Vec<Builtin>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let row = |name, title, product, share_percent, profile| Builtin {
            name,
            title,
            product,
            share_percent,
            profile,
        };
        vec![
            row(
                "firewall",
                "firewall",
                "iptables",
                Some(26),
                Profile::reading(&FIVE).dropping(),
            ),
            row(
                "ids",
                "intrusion detection system",
                "NIDS",
                Some(20),
                Profile::reading(&[SrcIp, DstIp, SrcPort, DstPort, Payload]),
            ),
            row(
                "gateway",
                "gateway",
                "Cisco MGX",
                Some(19),
                Profile::reading(&[SrcIp, DstIp]),
            ),
            row(
                "lb",
                "load balancer",
                "F5, A10",
                Some(10),
                Profile::reading(&[SrcPort, DstPort]).read_writing(&[SrcIp, DstIp]),
            ),
            row(
                "cache",
                "cache",
                "Nginx",
                Some(10),
                Profile::reading(&[SrcIp, SrcPort, Payload]),
            ),
            row(
                "vpn",
                "virtual private network",
                "OpenVPN",
                Some(7),
                Profile::reading(&[SrcIp, DstIp])
                    .read_writing(&[Payload])
                    .reshaping(),
            ),
            row(
                "nat",
                "network address translator",
                "iptables",
                None,
                Profile::NONE.read_writing(&FIVE),
            ),
            row(
                "proxy",
                "proxy",
                "Squid",
                None,
                Profile::NONE.read_writing(&[SrcIp, DstIp]),
            ),
            row(
                "compressor",
                "traffic compressor",
                "Cisco IOS",
                None,
                Profile::NONE.read_writing(&[Payload]),
            ),
            row("shaper", "traffic shaper", "Linux tc", None, Profile::NONE),
            row(
                "monitor",
                "monitor",
                "NetFlow",
                None,
                Profile::reading(&FIVE),
            ),
        ]
    })
}

/// The row named `name`.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    builtins().iter().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_found_by_name() {
        assert_eq!(builtins().len(), 11);
        let vpn = builtin("vpn").expect("vpn is in Table 1");
        assert_eq!(
            vpn.profile.to_string(),
            "reads: src_ip dst_ip payload; writes: payload; drops: no; adds/removes headers: yes"
        );
        assert_eq!(builtin("shaper").map(|b| b.profile), Some(Profile::NONE));
        assert!(builtin("router").is_none());
        let shares: u32 = builtins().iter().filter_map(|b| b.share_percent).sum();
        assert_eq!(shares, 92);
    }
}
