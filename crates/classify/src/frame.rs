//! Filters on whole Ethernet frames with the `IPClassifier` expression
//! language (`tcp port 80`, `ip6 and icmp6`, `src net 10.0.0.0/8`), as
//! `pronto capture` and `pronto trace` take them: the operator writes what
//! `tcpdump` would take, and the frame's IP header is found behind its
//! Ethernet header and up to two VLAN tags.

use crate::{CompileError, Program};

/// A compiled frame filter.
#[derive(Clone, Debug)]
pub struct FrameFilter {
    program: Program,
}

impl FrameFilter {
    /// Compiles `expr`, one `IPClassifier` expression.
    pub fn new(expr: &str) -> Result<FrameFilter, CompileError> {
        let program = Program::ip_classifier(&[expr]).map_err(|e| CompileError {
            arg: 0,
            // "IPClassifier pattern 0: ..." names an element the operator
            // did not write.
            message: e
                .message
                .strip_prefix("IPClassifier pattern 0: ")
                .unwrap_or(&e.message)
                .to_string(),
        })?;
        Ok(FrameFilter { program })
    }

    /// True when `frame` (from its Ethernet header on) matches. Frames
    /// that carry no IPv4 or IPv6 packet (ARP, LLDP) never match.
    pub fn matches(&self, frame: &[u8]) -> bool {
        let Some(nh) = ip_offset(frame) else {
            return false;
        };
        let got = if self.program.uses_link() {
            self.program.classify_link(frame, nh, frame)
        } else {
            self.program.classify(frame, nh)
        };
        got == Some(0)
    }
}

/// The offset of the IP header in an Ethernet frame (behind up to two
/// 802.1Q/802.1ad tags), if it carries IPv4 or IPv6.
pub fn ip_offset(frame: &[u8]) -> Option<usize> {
    let mut at = 12;
    for _ in 0..3 {
        let t = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
        match t {
            0x0800 | 0x86dd => return Some(at + 2),
            0x8100 | 0x88a8 => at += 4,
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(ethertype: u16, ip: &[u8]) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(ip);
        f
    }

    /// An IPv4 UDP datagram from 10.0.0.1:1000 to 10.0.0.2:53.
    fn udp4() -> Vec<u8> {
        let mut ip = vec![
            0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        ip.extend_from_slice(&[0x03, 0xe8, 0, 53, 0, 8, 0, 0]);
        ip
    }

    #[test]
    fn finds_the_ip_header_behind_vlan_tags() {
        let f = FrameFilter::new("udp dst port 53").expect("compiles");
        assert!(f.matches(&frame(0x0800, &udp4())));
        let mut tagged = frame(0x8100, &[0, 5]);
        tagged.extend_from_slice(&0x0800u16.to_be_bytes());
        tagged.extend_from_slice(&udp4());
        assert!(f.matches(&tagged));
        assert!(!FrameFilter::new("tcp").expect("compiles").matches(&tagged));
        assert!(!FrameFilter::new("src host 10.0.0.2")
            .expect("compiles")
            .matches(&tagged));
        // ARP carries no IP header: no IP expression matches it.
        assert!(!FrameFilter::new("true")
            .expect("compiles")
            .matches(&frame(0x0806, &[0; 28])));
        // Truncated frames do not match either.
        assert!(!f.matches(&[0u8; 13]));
    }

    #[test]
    fn errors_name_the_word_without_an_element() {
        let e = FrameFilter::new("udp dst prot 53").expect_err("a typo");
        assert!(!e.message.contains("IPClassifier pattern"), "{}", e.message);
        assert!(e.message.contains("prot"), "{}", e.message);
    }
}
