//! Raw IPv4 sockets (`SOCK_RAW`): the socket options rustix does not
//! offer, for the `RawSocket` elements (`IP_HDRINCL`) and
//! `IPFlowRawSockets` (`IP_HDRINCL` and a classic BPF filter that keeps
//! one flow's replies, `SO_ATTACH_FILTER`).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Sets `IP_HDRINCL`: packets written to the raw socket carry their own IP
/// header.
pub fn set_ip_hdrincl(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let v: libc::c_int = on.into();
    // SAFETY: `v` is a live c_int of the length passed; the kernel only
    // reads it. `fd` is a valid descriptor for the duration of the call.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_HDRINCL,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The classic BPF program that keeps, on a raw IPv4 socket, only the
/// replies of one TCP or UDP flow: datagrams of protocol `proto` from
/// `src`, from port `sport` to port `dport`, that are not later fragments.
/// A raw socket's filter sees the datagram from its IP header on, so the
/// offsets are IP offsets; a load past the end ends the program with 0
/// (refused).
pub fn flow_reply_filter(
    proto: u8,
    src: std::net::Ipv4Addr,
    sport: u16,
    dport: u16,
) -> [libc::sock_filter; 13] {
    const LD_B_ABS: u16 = 0x30;
    const LD_H_ABS: u16 = 0x28;
    const LD_W_ABS: u16 = 0x20;
    const LDX_B_MSH: u16 = 0xb1;
    const LD_H_IND: u16 = 0x48;
    const JEQ_K: u16 = 0x15;
    const JSET_K: u16 = 0x45;
    const RET_K: u16 = 0x06;
    let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    // Instruction 12 refuses; each jump that refuses lands there.
    [
        op(LD_B_ABS, 0, 0, 9),              // 0: protocol
        op(JEQ_K, 0, 10, u32::from(proto)), // 1
        op(LD_W_ABS, 0, 0, 12),             // 2: source address
        op(JEQ_K, 0, 8, u32::from(src)),    // 3
        op(LD_H_ABS, 0, 0, 6),              // 4: flags and offset
        op(JSET_K, 6, 0, 0x1fff),           // 5: a later fragment
        op(LDX_B_MSH, 0, 0, 0),             // 6: X = header length
        op(LD_H_IND, 0, 0, 0),              // 7: source port
        op(JEQ_K, 0, 3, u32::from(sport)),  // 8
        op(LD_H_IND, 0, 0, 2),              // 9: destination port
        op(JEQ_K, 0, 1, u32::from(dport)),  // 10
        op(RET_K, 0, 0, u32::MAX),          // 11: keep it whole
        op(RET_K, 0, 0, 0),                 // 12: refuse
    ]
}

/// Attaches a classic BPF program to a socket (`SO_ATTACH_FILTER`): the
/// kernel runs it on every packet before queueing it, and queues only
/// those it keeps. Datagrams queued before the call stay queued.
pub fn attach_filter(fd: BorrowedFd<'_>, prog: &[libc::sock_filter]) -> io::Result<()> {
    let len = u16::try_from(prog.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "BPF program too long"))?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: `fprog` points at `prog`, `len` instructions long, live for
    // the call; the kernel copies the program and never writes through
    // the pointer. `fd` is a valid descriptor for the duration of the call.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, UdpSocket};
    use std::os::fd::AsFd;
    use std::time::{Duration, Instant};

    use super::*;

    /// A raw UDP socket with a flow's reply filter keeps exactly that
    /// flow's datagrams: not those from another port, nor to another.
    #[test]
    fn flow_reply_filter_keeps_only_the_flow() {
        let raw = match rustix::net::socket_with(
            rustix::net::AddressFamily::INET,
            rustix::net::SocketType::RAW,
            rustix::net::SocketFlags::CLOEXEC | rustix::net::SocketFlags::NONBLOCK,
            Some(rustix::net::ipproto::UDP),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::PERM | rustix::io::Errno::ACCESS) => {
                eprintln!("SKIPPED: raw sockets need CAP_NET_RAW");
                return;
            }
            Err(e) => panic!("socket: {e}"),
        };
        let a = UdpSocket::bind("127.0.0.1:0").expect("bind a");
        let b = UdpSocket::bind("127.0.0.1:0").expect("bind b");
        let (pa, pb) = (
            a.local_addr().expect("a").port(),
            b.local_addr().expect("b").port(),
        );
        // The flow: replies from a's port to port 40000 + pid's low bits.
        let dport = 40000 + (std::process::id() % 20000) as u16;
        let prog = flow_reply_filter(17, Ipv4Addr::LOCALHOST, pa, dport);
        attach_filter(raw.as_fd(), &prog).expect("attach");
        // Drain whatever was queued before the filter.
        let mut buf = [0u8; 256];
        while rustix::net::recv(&raw, &mut buf, rustix::net::RecvFlags::empty()).is_ok() {}
        b.send_to(b"wrong source port", ("127.0.0.1", dport))
            .expect("send b");
        a.send_to(b"wrong destination port", ("127.0.0.1", dport + 1))
            .expect("send a+1");
        a.send_to(b"the flow", ("127.0.0.1", dport))
            .expect("send a");
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut got = Vec::new();
        while Instant::now() < deadline {
            match rustix::net::recv(&raw, &mut buf, rustix::net::RecvFlags::empty()) {
                Ok((n, _)) => got.push(buf[..n].to_vec()),
                Err(rustix::io::Errno::AGAIN) => {
                    if !got.is_empty() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("recv: {e}"),
            }
        }
        assert_eq!(got.len(), 1, "{got:?} (b's port {pb})");
        let d = &got[0];
        assert_eq!(&d[20..22], &pa.to_be_bytes());
        assert_eq!(&d[22..24], &dport.to_be_bytes());
        assert_eq!(&d[28..], b"the flow");
    }
}
