//! Transport checksums over the IPv4 pseudo-header, as Click computes them
//! (the final destination of a source route stands in for the destination
//! address).

use pronto_packet::wire::{fold, ones_sum, pseudo_header_sum};

/// The destination address the pseudo-header uses: the last hop of a
/// strict or loose source route option when there is one, else the
/// header's destination. `ip` holds at least the whole IP header.
pub fn pseudo_dst(ip: &[u8]) -> [u8; 4] {
    let hl = ((ip[0] & 15) as usize * 4).min(ip.len());
    let mut i = 20;
    while i < hl {
        match ip[i] {
            1 => {
                i += 1;
                continue;
            }
            0 => break,
            _ => {}
        }
        if i + 1 >= hl || ip[i + 1] < 2 || i + ip[i + 1] as usize > hl {
            break;
        }
        let olen = ip[i + 1] as usize;
        if (ip[i] == 137 || ip[i] == 131) && olen >= 7 {
            let e = i + olen;
            return [ip[e - 4], ip[e - 3], ip[e - 2], ip[e - 1]];
        }
        i += olen;
    }
    [ip[16], ip[17], ip[18], ip[19]]
}

/// The checksum of transport bytes `l4` under the pseudo-header of IP
/// header `ip` (a result of 0 is returned as 0, as Click does).
pub fn l4_checksum(ip: &[u8], l4: &[u8]) -> u16 {
    let ps = pseudo_header_sum(&ip[12..16], &pseudo_dst(ip), ip[9], l4.len());
    !fold(ones_sum(l4, ps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_route_final_hop() {
        // IHL 7: one NOP, then LSRR (131) of length 7 ending in 9.9.9.9.
        let mut ip = [0u8; 28];
        ip[0] = 0x47;
        ip[16..20].copy_from_slice(&[1, 2, 3, 4]);
        ip[20] = 1;
        ip[21..28].copy_from_slice(&[131, 7, 4, 9, 9, 9, 9]);
        assert_eq!(pseudo_dst(&ip), [9, 9, 9, 9]);
        ip[21] = 7; // record route instead: ignored
        assert_eq!(pseudo_dst(&ip), [1, 2, 3, 4]);
    }
}
