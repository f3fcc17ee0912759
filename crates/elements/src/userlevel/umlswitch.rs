//! `UMLSwitch`: a port on a User-Mode Linux switch daemon (`uml_switch`),
//! reached through its control socket.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::socket::Socket;
use crate::util::cfg_err;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// `uml_switch`'s request magic and protocol version.
const SWITCH_MAGIC: u32 = 0xfeed_face;
const SWITCH_VERSION: u32 = 3;
/// `REQ_NEW_CONTROL`.
const REQ_NEW_CONTROL: u32 = 0;
/// `sizeof(struct sockaddr_un)` and its `sun_path`.
const SOCKADDR_UN_LEN: usize = 110;
const SUN_PATH_LEN: usize = 108;
/// `sizeof(struct request_v3)`: three 32-bit fields, a `sockaddr_un`,
/// padded to 4 bytes.
const REQUEST_LEN: usize = 124;
/// How long the switch may take to answer.
const ANSWER_WAIT: Duration = Duration::from_secs(5);

/// Connects to a `uml_switch` and exchanges frames with it.
pub struct UMLSwitch;

impl UMLSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("UMLSwitch")
        .ports("0-1/0-1")
        .processing("l/h")
        .flow("x/y")
        .keywords(&["PATH"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "UMLSwitch([PATH])\n\n\
             Connects to a User-Mode Linux switch daemon (uml_switch) through its\n\
             control socket PATH (default /tmp/uml.ctl), asks it for a port\n\
             (protocol version 3: REQ_NEW_CONTROL with a local abstract socket\n\
             name), and then exchanges Ethernet frames with the switch as a\n\
             UNIX_DGRAM Socket client: each input packet is sent to the switch's\n\
             data socket as one datagram, and each datagram the switch sends is\n\
             pushed out of output 0 as one packet, stamped with the receive time.\n\
             Packets do not flow through the element. The control connection is\n\
             held open for the element's life (the switch drops the port when it\n\
             closes). Configuration fails if the switch cannot be reached or does\n\
             not answer within five seconds. No socket is opened by `pronto\n\
             check`.\n\n\
             Everything else is Socket's (SNAPLEN 2048, of which a packet buffer\n\
             keeps 1,920; the same drops and handlers). In a sandboxed instance\n\
             (pronto daemon) the element reaches only switches inside its own\n\
             sandbox.\n\n\
             Ports: 0 or 1 pull input (a push input works too: pronto's); 0 or 1\n\
             push output.\n\
             Arguments:\n  \
             PATH  the switch's control socket (at most 107 bytes)\n\
             Handlers:\n  \
             received (read), sent (read), drops (read), truncated (read),\n  \
             denied (read, always 0), connected (read) (all pronto's; see Socket)",
        );

    /// Configures a `UMLSwitch`: asks the switch for a port.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let path: Option<String> = a.read_p("PATH")?;
        a.finish()?;
        let path = ctx
            .path(path.as_deref().unwrap_or("/tmp/uml.ctl"))
            .to_string_lossy()
            .into_owned();
        if path.len() >= SUN_PATH_LEN {
            return Err(cfg_err("path to uml_switch control socket too long"));
        }
        if crate::world::check_only() {
            return Ok(Box::new(Socket::unopened_for_check(ctx, "UMLSwitch")));
        }
        let mut control = UnixStream::connect(&path).map_err(|e| {
            cfg_err(format!(
                "could not connect to control socket {path}: {}",
                strip_os(&e)
            ))
        })?;
        // Our data socket's abstract name: a zero byte, then our process ID
        // and the microseconds of the time (Click's layout).
        let mut local = [0u8; SUN_PATH_LEN];
        local[4..8].copy_from_slice(&std::process::id().to_ne_bytes());
        let usecs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_micros());
        local[8..12].copy_from_slice(&usecs.to_ne_bytes());
        let mut req = [0u8; REQUEST_LEN];
        req[0..4].copy_from_slice(&SWITCH_MAGIC.to_ne_bytes());
        req[4..8].copy_from_slice(&SWITCH_VERSION.to_ne_bytes());
        req[8..12].copy_from_slice(&REQ_NEW_CONTROL.to_ne_bytes());
        req[12..14].copy_from_slice(&(libc_af_unix()).to_ne_bytes());
        req[14..14 + SUN_PATH_LEN].copy_from_slice(&local);
        control
            .write_all(&req)
            .map_err(|e| cfg_err(format!("control setup request failed: {}", strip_os(&e))))?;
        let mut answer = [0u8; SOCKADDR_UN_LEN];
        control
            .set_read_timeout(Some(ANSWER_WAIT))
            .and_then(|()| control.read_exact(&mut answer))
            .map_err(|e| cfg_err(format!("read of data socket failed: {}", strip_os(&e))))?;
        let data = &answer[2..];
        let local_name = local[1..].to_vec();
        let keep = OwnedFd::from(control);
        if data[0] != 0 {
            return Err(cfg_err(
                "read of data socket failed: the switch's data socket is not an abstract name",
            ));
        }
        let s = Socket::abstract_dgram(ctx, "UMLSwitch", data[1..].to_vec(), local_name, keep)?;
        Ok(Box::new(s))
    }
}

/// `AF_UNIX` as `sun_family` holds it.
fn libc_af_unix() -> u16 {
    rustix::net::AddressFamily::UNIX.as_raw()
}

/// An I/O error's text without Rust's "(os error N)".
fn strip_os(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener};

    use pronto_packet::Pool;

    use super::*;
    use crate::app::testing::{config_err, configure, scratch};

    #[test]
    fn config_errors() {
        let dir = scratch("uml-err");
        let r = configure(
            UMLSwitch::SPEC.keywords,
            UMLSwitch::configure,
            "nobody.ctl",
            &[false],
            &[true],
            &dir,
        );
        assert_eq!(
            config_err(r),
            format!(
                "could not connect to control socket {}: No such file or directory",
                dir.join("nobody.ctl").display()
            )
        );
        let long = format!("/{}", "x".repeat(110));
        let r = configure(
            UMLSwitch::SPEC.keywords,
            UMLSwitch::configure,
            &long,
            &[false],
            &[true],
            &dir,
        );
        assert_eq!(config_err(r), "path to uml_switch control socket too long");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Against a stand-in uml_switch: the request is protocol version 3
    /// with our abstract name; frames go both ways byte for byte.
    #[test]
    fn talks_to_a_uml_switch() {
        let dir = scratch("uml");
        let ctl = dir.join("uml.ctl");
        let listener = UnixListener::bind(&ctl).expect("control socket");
        // The switch's data socket: an abstract name padded to 107 bytes.
        let mut data_name = vec![0u8; SUN_PATH_LEN - 1];
        let tag = format!("pronto-uml-test-{}", std::process::id());
        data_name[..tag.len()].copy_from_slice(tag.as_bytes());
        let data =
            UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(&data_name).expect("name"))
                .expect("data socket");
        data.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let switch = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().expect("accept");
            let mut req = [0u8; REQUEST_LEN];
            c.read_exact(&mut req).expect("request");
            let mut answer = [0u8; SOCKADDR_UN_LEN];
            answer[0..2].copy_from_slice(&libc_af_unix().to_ne_bytes());
            answer[3..3 + data_name.len()].copy_from_slice(&data_name);
            c.write_all(&answer).expect("answer");
            // Hold the control connection until the element closes it.
            let mut rest = Vec::new();
            let _ = c.read_to_end(&mut rest);
            req
        });
        let mut e = configure(
            UMLSwitch::SPEC.keywords,
            UMLSwitch::configure,
            ctl.to_str().expect("path"),
            &[true],
            &[true],
            &dir,
        )
        .expect("configure");
        let pool = Pool::new(16).expect("pool");
        let frame: Vec<u8> = (0..60u8).collect();
        let _ = crate::app::testing::push(e.as_mut(), &pool, &[&frame], 1, 0);
        let mut buf = [0u8; 2048];
        let (n, from) = data.recv_from(&mut buf).expect("frame at the switch");
        assert_eq!(&buf[..n], frame.as_slice());
        // The frame came from the name the request gave.
        let from_name = from.as_abstract_name().expect("abstract").to_vec();
        // Back from the switch to the element.
        let back: Vec<u8> = (0..64u8).rev().collect();
        data.send_to_addr(
            &back,
            &SocketAddr::from_abstract_name(&from_name).expect("name"),
        )
        .expect("send back");
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        let mut got = Vec::new();
        while got.is_empty() && std::time::Instant::now() < deadline {
            let (_, outs, _) = crate::app::testing::run_task(e.as_mut(), &pool, 1, 5);
            got.extend(
                outs[0]
                    .iter()
                    .map(|p| (p.data().to_vec(), p.timestamp_ns())),
            );
        }
        assert_eq!(got, vec![(back, 5)]);
        e.cleanup();
        drop(e);
        let req = switch.join().expect("switch");
        assert_eq!(&req[0..4], &SWITCH_MAGIC.to_ne_bytes());
        assert_eq!(&req[4..8], &3u32.to_ne_bytes());
        assert_eq!(&req[8..12], &0u32.to_ne_bytes());
        assert_eq!(&req[12..14], &libc_af_unix().to_ne_bytes());
        assert_eq!(req[14], 0, "an abstract name");
        assert_eq!(&req[15..14 + SUN_PATH_LEN], from_name.as_slice());
        assert_eq!(&req[18..22], &std::process::id().to_ne_bytes());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
