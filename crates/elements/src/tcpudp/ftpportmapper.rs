//! `FTPPortMapper`: FTP application-level gateway for the rewriters.

use std::sync::{Arc, Mutex};

use pronto_packet::wire::{addr4, be16, fold, ones_sum, pseudo_header_sum, set_be16};
use pronto_packet::{Batch, Packet};

use crate::tcpudp::rwcore::{lock, update_in_cksum, Core, FlowId};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_OTHER,
    FIELD_PAYLOAD,
};

const IP_PROTO_TCP: u8 = 6;

/// Watches FTP control packets for `PORT` commands: installs the data
/// connection's mapping in a rewriter, rewrites the command to the mapped
/// address and port, and records the length change as a sequence-number
/// delta in the control connection's mapping.
pub struct FTPPortMapper {
    control: Arc<Mutex<Core>>,
    data: Arc<Mutex<Core>>,
    data_input: usize,
}

fn rewriter(
    ctx: &ConfigCtx<'_>,
    what: &str,
    name: &str,
    classes: &[&str],
    expected: &str,
) -> Result<Arc<Mutex<Core>>, ConfigError> {
    let peer = ctx
        .peer(name)
        .ok_or_else(|| ConfigError::new(format!("{what}: does not name an element")))?;
    if !classes.contains(&peer.class) {
        return Err(ConfigError::new(format!(
            "{what}: element type mismatch, expected {expected}"
        )));
    }
    peer.shared
        .and_then(|s| s.downcast::<Mutex<Core>>().ok())
        .ok_or_else(|| {
            ConfigError::new(format!(
                "{what}: element type mismatch, expected {expected}"
            ))
        })
}

/// Writes `v` in decimal into `buf` at `at`; returns the new position.
fn put_num(buf: &mut [u8; 32], mut at: usize, v: u32) -> usize {
    let mut digits = [0u8; 3];
    let mut n = 0;
    let mut v = v;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    while n > 0 {
        n -= 1;
        buf[at] = digits[n];
        at += 1;
    }
    at
}

impl FTPPortMapper {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FTPPortMapper")
        .ports("1/1")
        .processing("a/a")
        .phase(crate::PHASE_DEFAULT + 1)
        .keywords(&["CONTROL_REWRITER", "DATA_REWRITER", "DATA_REWRITER_INPUT"])
        .profile(
            ActionProfile::reads(FIELD_PAYLOAD | FIELD_OTHER)
                .writes(FIELD_PAYLOAD | FIELD_OTHER)
                .reshaping(),
        )
        .doc(
            "FTPPortMapper(CONTROL_REWRITER, DATA_REWRITER, DATA_REWRITER_INPUT)\n\n\
             Expects FTP control packets (IP header annotation set). For a 'PORT\n\
             h1,h2,h3,h4,p1,p2' command that starts the TCP payload, of a connection\n\
             CONTROL_REWRITER (a TCPRewriter or IPRewriter, downstream) has a mapping\n\
             for, it installs a mapping for the data connection (that address and\n\
             port to the packet's destination, port one below the packet's\n\
             destination port) in DATA_REWRITER (IPRewriter, TCPRewriter or\n\
             UDPRewriter) as if a packet had arrived on its input DATA_REWRITER_INPUT,\n\
             rewrites the command to the mapped address and port, fixes the IP length\n\
             and checksums, and tells CONTROL_REWRITER to shift later sequence and\n\
             acknowledgement numbers of the connection by the length change. The\n\
             packet's addresses and ports are not changed. Other packets pass\n\
             unchanged.\n\n\
             Ports: one agnostic input and output.",
        );

    /// Configures an `FTPPortMapper`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let c: String = a.read_mp("CONTROL_REWRITER")?;
        let d: String = a.read_mp("DATA_REWRITER")?;
        let input: i64 = a.read_mp("DATA_REWRITER_INPUT")?;
        a.finish()?;
        let control = rewriter(
            ctx,
            "CONTROL_REWRITER",
            &c,
            &["TCPRewriter", "IPRewriter"],
            "TCPRewriter",
        )?;
        let data = rewriter(
            ctx,
            "DATA_REWRITER",
            &d,
            &["TCPRewriter", "IPRewriter", "UDPRewriter"],
            "IPRewriterBase",
        )?;
        let ninputs = lock(&data).inputs.len() as i64;
        if input < 0 || input >= ninputs {
            return Err(ConfigError::new("DATA_REWRITER_INPUT out of range"));
        }
        Ok(Box::new(FTPPortMapper {
            control,
            data,
            data_input: input as usize,
        }))
    }

    fn action(&mut self, p: &mut Packet, now: i64) {
        let Some(nh) = p.network_header_offset().filter(|&o| o >= 0) else {
            return;
        };
        let nh = nh as usize;
        let d = p.data();
        if d.len() < nh + 20 || d[nh + 9] != IP_PROTO_TCP {
            return;
        }
        let th = match p.transport_header_offset() {
            Some(t) if t >= 0 => t as usize,
            _ => nh + ((d[nh] & 15) as usize) * 4,
        };
        if d.len() < th + 20 {
            return;
        }
        let data_off = th + ((d[th + 12] >> 4) as usize) * 4;
        if d.len() < data_off + 5 {
            return;
        }
        let len = d.len() - data_off;
        let pl = &d[data_off..];
        if !pl[..4].eq_ignore_ascii_case(b"PORT") || pl[4] != b' ' {
            return;
        }
        let control_flow = FlowId {
            saddr: u32::from_be_bytes(addr4(d, nh + 12)),
            daddr: u32::from_be_bytes(addr4(d, nh + 16)),
            sport: be16(d, th),
            dport: be16(d, th + 2),
        };
        let Some(centry) = lock(&self.control).get_entry(IP_PROTO_TCP, control_flow, None, now)
        else {
            return;
        };
        let mut pos = 5;
        while pos < len && pl[pos] == b' ' {
            pos += 1;
        }
        let arg_off = pos;
        let mut nums = [0u32; 6];
        let mut which = 0;
        while pos < len && which < 6 {
            match pl[pos] {
                // Unsigned arithmetic that wraps, as the reference's does.
                c @ b'0'..=b'9' => {
                    nums[which] = nums[which].wrapping_mul(10).wrapping_add((c - b'0') as u32)
                }
                b',' => which += 1,
                _ => break,
            }
            pos += 1;
        }
        if which != 5 || pos >= len || (pl[pos] != b'\r' && pl[pos] != b'\n') {
            return;
        }
        if nums.iter().any(|&n| n >= 256) {
            return;
        }
        let flow = FlowId {
            saddr: (nums[0] << 24) | (nums[1] << 16) | (nums[2] << 8) | nums[3],
            sport: ((nums[4] << 8) | nums[5]) as u16,
            daddr: control_flow.daddr,
            dport: control_flow.dport.wrapping_sub(1),
        };
        let Some(fwd) = lock(&self.data).get_entry(IP_PROTO_TCP, flow, Some(self.data_input), now)
        else {
            return;
        };
        let (na, np) = (fwd.rewritten.saddr, fwd.rewritten.sport as u32);
        let mut buf = [0u8; 32];
        let mut n = 0;
        for (i, v) in [
            na >> 24,
            (na >> 16) & 255,
            (na >> 8) & 255,
            na & 255,
            np >> 8,
            np & 255,
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                buf[n] = b',';
                n += 1;
            }
            n = put_num(&mut buf, n, v);
        }
        let arg_len = pos - arg_off;
        let seq = u32::from_be_bytes([d[th + 4], d[th + 5], d[th + 6], d[th + 7]]);
        if arg_len < n {
            let grow = n - arg_len;
            if p.tailroom() < grow {
                return;
            }
            p.put_uninit(grow);
        }
        {
            let data = p.data_mut();
            let start = data_off + arg_off;
            data.copy_within(start + arg_len..start + len - arg_off, start + n);
            data[start..start + n].copy_from_slice(&buf[..n]);
        }
        if arg_len > n {
            p.take(arg_len - n);
        }
        let total = p.len();
        let data = p.data_mut();
        let old_len = be16(data, nh + 2);
        let new_len = (total - nh) as u16;
        set_be16(data, nh + 2, new_len);
        let s = update_in_cksum(be16(data, nh + 10), old_len, new_len);
        set_be16(data, nh + 10, s);
        // Later data of this direction moves by the length change.
        let delta = n as i32 - arg_len as i32;
        let anno = {
            let mut c = lock(&self.control);
            c.update_seqno_delta(&centry, seq.wrapping_add(len as u32), delta);
            c.reply_anno_of(&centry)
        };
        lock(&self.data).set_reply_anno_of(&fwd, anno);
        data[th + 16] = 0;
        data[th + 17] = 0;
        let tcp_len = total - th;
        let ps = pseudo_header_sum(
            &data[nh + 12..nh + 16],
            &data[nh + 16..nh + 20],
            IP_PROTO_TCP,
            tcp_len,
        );
        let c = !fold(ones_sum(&data[th..], ps));
        set_be16(data, th + 16, c);
    }
}

impl Element for FTPPortMapper {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        push_each(batch, out, |p, _| {
            self.action(p, now);
            Some(0)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::tcprewriter::TCPRewriter;
    use crate::tcpudp::testutil::{
        config_error, configure, configure_with, packet, run, TestPeers,
    };
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    const CLIENT: [u8; 4] = [1, 0, 0, 2];
    const SERVER: [u8; 4] = [2, 0, 0, 2];
    const NAT: [u8; 4] = [10, 0, 0, 1];

    /// An IPv4 + TCP packet with correct checksums: `opts` are the TCP
    /// options (a multiple of 4 bytes), flags ACK|PSH unless `syn`.
    #[allow(clippy::too_many_arguments)]
    fn tcp(
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        opts: &[u8],
        payload: &[u8],
    ) -> Vec<u8> {
        let total = 20 + 20 + opts.len() + payload.len();
        let mut v = vec![
            0x45,
            0x00, // version/IHL, TOS
            (total >> 8) as u8,
            total as u8, // total length
            0x43,
            0x21,
            0x40,
            0x00, // id, DF
            64,
            6,
            0,
            0, // TTL, TCP, checksum (below)
        ];
        v.extend_from_slice(&src);
        v.extend_from_slice(&dst);
        v.extend_from_slice(&sport.to_be_bytes());
        v.extend_from_slice(&dport.to_be_bytes());
        v.extend_from_slice(&seq.to_be_bytes());
        v.extend_from_slice(&ack.to_be_bytes());
        let doff = ((20 + opts.len()) / 4) as u8;
        let flags = if seq == 1000 { 0x02 } else { 0x18 };
        v.extend_from_slice(&[doff << 4, flags, 0x72, 0x10, 0, 0, 0, 0]); // window, csum, urp
        v.extend_from_slice(opts);
        v.extend_from_slice(payload);
        let c = checksum(&v[..20]);
        v[10..12].copy_from_slice(&c.to_be_bytes());
        let ps = pseudo_header_sum(&src, &dst, 6, total - 20);
        let c = !fold(ones_sum(&v[20..], ps));
        v[36..38].copy_from_slice(&c.to_be_bytes());
        v
    }

    /// `FTPPortMapper(rw, rw, 0) -> rw :: TCPRewriter(pattern 10.0.0.1
    /// 9000-14000# - - 0 1, drop)`.
    fn setup() -> (Box<dyn Element>, Box<dyn Element>) {
        let rw = configure(
            TCPRewriter::configure,
            &TCPRewriter::SPEC,
            "pattern 10.0.0.1 9000-14000# - - 0 1, drop",
            2,
            2,
        )
        .expect("rewriter");
        let mut peers = TestPeers::default();
        peers.add("rw", "TCPRewriter", rw.as_ref());
        let ftp = configure_with(
            FTPPortMapper::configure,
            &FTPPortMapper::SPEC,
            "rw, rw, 0",
            1,
            1,
            &peers,
        )
        .expect("ftp");
        (ftp, rw)
    }

    /// Sends `bytes` through the mapper and then input 0 of the rewriter;
    /// returns what the mapper made and what the rewriter sent to output 0.
    fn outbound(
        ftp: &mut dyn Element,
        rw: &mut dyn Element,
        pool: &Pool,
        bytes: &[u8],
    ) -> (Vec<u8>, Vec<u8>) {
        let p = packet(pool, bytes, Some((0, 20)));
        let mut o = run(ftp, 0, vec![p], 1, pool, 0);
        let mid = o[0].pop().expect("the mapper passes every packet");
        let mut o = run(rw, 0, vec![packet(pool, &mid, Some((0, 20)))], 2, pool, 0);
        (mid, o[0].pop().expect("rewritten"))
    }

    fn inbound(rw: &mut dyn Element, pool: &Pool, bytes: &[u8]) -> Vec<u8> {
        let mut o = run(rw, 1, vec![packet(pool, bytes, Some((0, 20)))], 2, pool, 0);
        o[1].pop().expect("mapped back")
    }

    #[test]
    fn port_command_grows_and_later_segments_move() {
        let pool = Pool::new(64).expect("pool");
        let (mut ftp, mut rw) = setup();
        let (ftp, rw) = (ftp.as_mut(), rw.as_mut());
        // SYN: the control connection gets 10.0.0.1:9000.
        let syn = tcp(CLIENT, SERVER, 6587, 21, 1000, 0, &[], b"");
        let (mid, out) = outbound(ftp, rw, &pool, &syn);
        assert_eq!(mid, syn);
        assert_eq!(out, tcp(NAT, SERVER, 9000, 21, 1000, 0, &[], b""));

        // PORT 1,0,0,2,3,9 (1.0.0.2:777) becomes the data connection's
        // mapped address 10.0.0.1:9001: 3 bytes longer, IP length and both
        // checksums fixed, addresses and ports untouched.
        let cmd = tcp(
            CLIENT,
            SERVER,
            6587,
            21,
            1001,
            5000,
            &[],
            b"PORT 1,0,0,2,3,9\r\n",
        );
        let (mid, out) = outbound(ftp, rw, &pool, &cmd);
        assert_eq!(
            mid,
            tcp(
                CLIENT,
                SERVER,
                6587,
                21,
                1001,
                5000,
                &[],
                b"PORT 10,0,0,1,35,41\r\n"
            )
        );
        // This segment itself keeps its sequence number.
        assert_eq!(
            out,
            tcp(
                NAT,
                SERVER,
                9000,
                21,
                1001,
                5000,
                &[],
                b"PORT 10,0,0,1,35,41\r\n"
            )
        );

        // The next client segment (original seq 1019) moves by 3.
        let list = tcp(CLIENT, SERVER, 6587, 21, 1019, 5000, &[], b"LIST\r\n");
        let (mid, out) = outbound(ftp, rw, &pool, &list);
        assert_eq!(mid, list);
        assert_eq!(
            out,
            tcp(NAT, SERVER, 9000, 21, 1022, 5000, &[], b"LIST\r\n")
        );

        // The server acknowledges 1028 with a SACK block [1022, 1028): the
        // client sees 1025 and [1019, 1025); the server's own sequence
        // numbers do not move.
        let sack = |l: u32, r: u32| {
            let mut o = vec![1, 1, 5, 10]; // NOP, NOP, SACK of one block
            o.extend_from_slice(&l.to_be_bytes());
            o.extend_from_slice(&r.to_be_bytes());
            o
        };
        let reply = tcp(
            SERVER,
            NAT,
            21,
            9000,
            5000,
            1028,
            &sack(1022, 1028),
            b"150 ok\r\n",
        );
        assert_eq!(
            inbound(rw, &pool, &reply),
            tcp(
                SERVER,
                CLIENT,
                21,
                6587,
                5000,
                1025,
                &sack(1019, 1025),
                b"150 ok\r\n"
            )
        );
        // An acknowledgement of data before the PORT segment's end is not
        // moved (1001 acknowledges only the SYN).
        let early = tcp(SERVER, NAT, 21, 9000, 5000, 1001, &[], b"");
        assert_eq!(
            inbound(rw, &pool, &early),
            tcp(SERVER, CLIENT, 21, 6587, 5000, 1001, &[], b"")
        );

        // The data connection from the server's port 20 to the mapped
        // address reaches the client's port 777.
        let data = tcp(SERVER, NAT, 20, 9001, 7000, 0, &[], b"file");
        assert_eq!(
            inbound(rw, &pool, &data),
            tcp(SERVER, CLIENT, 20, 777, 7000, 0, &[], b"file")
        );
        let table = rw.read_handler("table").expect("table");
        assert!(
            table
                .contains("(1.0.0.2, 777, 2.0.0.2, 20) => (10.0.0.1, 9001, 2.0.0.2, 20) [*0 1] i0"),
            "{table}"
        );
        assert!(
            table.contains("(1.0.0.2, 6587, 2.0.0.2, 21) => (10.0.0.1, 9000, 2.0.0.2, 21) seq +3"),
            "{table}"
        );
    }

    #[test]
    fn port_command_shrinks_and_deltas_add_up() {
        let pool = Pool::new(64).expect("pool");
        let (mut ftp, mut rw) = setup();
        let (ftp, rw) = (ftp.as_mut(), rw.as_mut());
        let syn = tcp(CLIENT, SERVER, 6587, 21, 1000, 0, &[], b"");
        outbound(ftp, rw, &pool, &syn);
        // A long argument (leading zeros, lower case, spaces, LF only)
        // becomes shorter: -9 bytes.
        let cmd = tcp(
            CLIENT,
            SERVER,
            6587,
            21,
            1001,
            1,
            &[],
            b"port   001,000,000,002,003,009\n",
        );
        let (mid, out) = outbound(ftp, rw, &pool, &cmd);
        assert_eq!(
            mid,
            tcp(
                CLIENT,
                SERVER,
                6587,
                21,
                1001,
                1,
                &[],
                b"port   10,0,0,1,35,41\n"
            )
        );
        assert_eq!(
            out,
            tcp(
                NAT,
                SERVER,
                9000,
                21,
                1001,
                1,
                &[],
                b"port   10,0,0,1,35,41\n"
            )
        );
        // A second PORT (original seq 1032) sits after the first change
        // (-9): it leaves at 1023 and adds +2 (to 10.0.0.1:9002).
        let cmd2 = tcp(
            CLIENT,
            SERVER,
            6587,
            21,
            1032,
            1,
            &[],
            b"PORT 1,0,0,2,3,10\r\n",
        );
        let (mid, out) = outbound(ftp, rw, &pool, &cmd2);
        assert_eq!(
            mid,
            tcp(
                CLIENT,
                SERVER,
                6587,
                21,
                1032,
                1,
                &[],
                b"PORT 10,0,0,1,35,42\r\n"
            )
        );
        assert_eq!(
            out,
            tcp(
                NAT,
                SERVER,
                9000,
                21,
                1023,
                1,
                &[],
                b"PORT 10,0,0,1,35,42\r\n"
            )
        );
        // After both: -9 + 2 = -7.
        let quit = tcp(CLIENT, SERVER, 6587, 21, 1051, 1, &[], b"QUIT\r\n");
        let (_, out) = outbound(ftp, rw, &pool, &quit);
        assert_eq!(out, tcp(NAT, SERVER, 9000, 21, 1044, 1, &[], b"QUIT\r\n"));
        // Acknowledgements map back through both changes.
        for (sent, seen) in [(1050, 1057), (1044, 1051), (1023, 1032), (1001, 1001)] {
            let ack = tcp(SERVER, NAT, 21, 9000, 1, sent, &[], b"");
            assert_eq!(
                inbound(rw, &pool, &ack),
                tcp(SERVER, CLIENT, 21, 6587, 1, seen, &[], b""),
                "ack {sent}"
            );
        }
    }

    #[test]
    fn other_packets_pass_unchanged() {
        let pool = Pool::new(64).expect("pool");
        let (mut ftp, mut rw) = setup();
        let (ftp, rw) = (ftp.as_mut(), rw.as_mut());
        // No control mapping yet: a PORT command is left alone.
        let cmd = tcp(
            CLIENT,
            SERVER,
            6587,
            21,
            1001,
            1,
            &[],
            b"PORT 1,0,0,2,3,9\r\n",
        );
        let o = run(
            ftp,
            0,
            vec![packet(&pool, &cmd, Some((0, 20)))],
            1,
            &pool,
            0,
        );
        assert_eq!(o[0], vec![cmd.clone()]);
        let syn = tcp(CLIENT, SERVER, 6587, 21, 1000, 0, &[], b"");
        outbound(ftp, rw, &pool, &syn);
        for bad in [
            &b"PORT 1,0,0,2,3\r\n"[..],   // five numbers
            b"PORT 1,0,0,2,3,9",          // no line end
            b"PORT 1,0,0,256,3,9\r\n",    // a number over 255
            b"PORTS 1,0,0,2,3,9\r\n",     // not the command
            b"USER PORT 1,0,0,2,3,9\r\n", // not first
        ] {
            let p = tcp(CLIENT, SERVER, 6587, 21, 1001, 1, &[], bad);
            let o = run(ftp, 0, vec![packet(&pool, &p, Some((0, 20)))], 1, &pool, 0);
            assert_eq!(o[0], vec![p], "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(rw.read_handler("nmappings").expect("h"), "1");
    }

    #[test]
    fn configuration_errors() {
        let rw = configure(
            TCPRewriter::configure,
            &TCPRewriter::SPEC,
            "pattern 10.0.0.1 9000-14000# - - 0 1, drop",
            2,
            2,
        )
        .expect("rewriter");
        let mut peers = TestPeers::default();
        peers.add("rw", "TCPRewriter", rw.as_ref());
        let err = |c: &str| {
            config_error(configure_with(
                FTPPortMapper::configure,
                &FTPPortMapper::SPEC,
                c,
                1,
                1,
                &peers,
            ))
            .message
        };
        assert_eq!(err("rw, rw, 2"), "DATA_REWRITER_INPUT out of range");
        assert_eq!(err("rw, rw, -1"), "DATA_REWRITER_INPUT out of range");
        assert_eq!(
            err("nope, rw, 0"),
            "CONTROL_REWRITER: does not name an element"
        );
        let e = config_error(configure(
            FTPPortMapper::configure,
            &FTPPortMapper::SPEC,
            "rw, rw, 0",
            1,
            1,
        ));
        assert_eq!(e.message, "CONTROL_REWRITER: does not name an element");
    }
}
