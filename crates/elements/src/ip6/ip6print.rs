//! `IP6Print`: prints a line per IPv6 packet.

use std::fmt::Write as _;
use std::io::Write as _;

use pronto_packet::wire::ipv6::{Ipv6Header, IP6_HEADER_LEN};
use pronto_packet::{Batch, Packet};

use crate::{
    ActionProfile, Args, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELDS_5TUPLE, FIELD_OTHER, FIELD_PAYLOAD,
};

/// Prints IPv6 packets' addresses, payload length, next header and hop
/// limit, optionally followed by their bytes in hex.
pub struct IP6Print {
    label: String,
    contents: bool,
    bytes: usize,
    active: bool,
    line: String,
}

impl IP6Print {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IP6Print")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["LABEL", "CONTENTS", "NBYTES", "ACTIVE"])
        .printing()
        .profile(ActionProfile::reads(
            FIELDS_5TUPLE | FIELD_OTHER | FIELD_PAYLOAD,
        ))
        .doc(
            "IP6Print([LABEL, keywords CONTENTS, NBYTES, ACTIVE])\n\n\
             Prints one line on standard error for each packet with a marked IPv6\n\
             header, as Click does:\n\n  \
             LABEL: SRC -> DST plen PAYLOADLEN, next NEXTHEADER, hlim HOPLIMIT\n\n\
             (`LABEL: ` left out when LABEL is empty; addresses in RFC 5952 text). With\n\
             CONTENTS true the first NBYTES bytes of the packet data follow on lines\n\
             indented by two spaces, in hex, a space after every 4 bytes and a new line\n\
             after every 24. Packets pass unchanged; those without a marked IPv6 header\n\
             are not printed.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  \
             CONTENTS  boolean (default false)\n  \
             NBYTES    bytes to print with CONTENTS (default 1500)\n  \
             ACTIVE    boolean (FastClick): print at all (default true)\n\
             Handlers:\n  active (read/write)",
        );

    /// Configures an `IP6Print`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(Self::build(ctx.args())?))
    }

    fn build(mut a: Args) -> Result<IP6Print, ConfigError> {
        let label = a.read_p::<String>("LABEL")?.unwrap_or_default();
        let bytes = a.read_or("NBYTES", 1500u32)? as usize;
        let contents = a.read_or("CONTENTS", false)?;
        let active = a.read_or("ACTIVE", true)?;
        a.finish()?;
        Ok(IP6Print {
            label,
            contents,
            bytes,
            active,
            line: String::with_capacity(256),
        })
    }

    /// Writes the text for `p` into `s` (ending in a newline); false if
    /// `p` has no marked IPv6 header.
    fn format(&self, p: &Packet, s: &mut String) -> bool {
        s.clear();
        let Some(ip) = p.network_data().filter(|d| d.len() >= IP6_HEADER_LEN) else {
            return false;
        };
        let h = Ipv6Header::new_unchecked(ip);
        if !self.label.is_empty() {
            s.push_str(&self.label);
            s.push_str(": ");
        }
        pronto_lang::args::write_ip6(s, &h.src_addr());
        s.push_str(" -> ");
        pronto_lang::args::write_ip6(s, &h.dst_addr());
        let _ = writeln!(
            s,
            " plen {}, next {}, hlim {}",
            h.payload_len(),
            h.next_header(),
            h.hop_limit()
        );
        if self.contents {
            s.push_str("  ");
            for (i, b) in p.data().iter().take(self.bytes).enumerate() {
                let _ = write!(s, "{b:02x}");
                if i % 24 == 23 {
                    s.push_str("\n  ");
                } else if i % 4 == 3 {
                    s.push(' ');
                }
            }
            // Click's message ends each line, the last one too.
            s.push('\n');
        }
        true
    }
}

impl Element for IP6Print {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
        if !self.active {
            return;
        }
        let mut line = std::mem::take(&mut self.line);
        let stderr = std::io::stderr();
        let mut w = stderr.lock();
        for p in batch.iter() {
            if self.format(p, &mut line) {
                let _ = w.write_all(line.as_bytes());
                if crate::chatter::listening() {
                    crate::chatter::copy(&line);
                }
            }
        }
        self.line = line;
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("active")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "active" => Ok(self.active.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "active" => {
                self.active = crate::util::parse_value(name, value)?;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::checkip6header::tests::ip6_packet;
    use crate::standard::test_support::{configure, pkt};
    use pronto_packet::Pool;

    fn text(config: &str, p: &Packet) -> Option<String> {
        let e =
            IP6Print::build(crate::Args::new(config, IP6Print::SPEC.keywords)).expect("configures");
        let mut s = String::new();
        e.format(p, &mut s).then_some(s)
    }

    #[test]
    fn prints_clicks_line() {
        let pool = Pool::new(64).expect("pool");
        let d = ip6_packet("2001:db8::1", "ff02::1:ff00:2", 58, &[128, 0, 0, 0]);
        let mut p = pkt(&pool, &d);
        p.set_network_header(0, 40);
        assert_eq!(
            text("ip6", &p).expect("printed"),
            "ip6: 2001:db8::1 -> ff02::1:ff00:2 plen 4, next 58, hlim 64\n"
        );
        assert_eq!(
            text("", &p).expect("printed"),
            "2001:db8::1 -> ff02::1:ff00:2 plen 4, next 58, hlim 64\n"
        );
        assert_eq!(text("", &pkt(&pool, &d)), None);
        assert!(configure(
            IP6Print::SPEC.keywords,
            IP6Print::configure,
            "x, NBYTES 3",
            1,
            1
        )
        .is_ok());
    }

    #[test]
    fn contents_in_clicks_layout() {
        let pool = Pool::new(64).expect("pool");
        let d = ip6_packet("::1", "::2", 59, &[0xab; 4]);
        let mut p = pkt(&pool, &d);
        p.set_network_header(0, 40);
        assert_eq!(
            text("c, CONTENTS true", &p).expect("printed"),
            "c: ::0.0.0.1 -> ::0.0.0.2 plen 4, next 59, hlim 64\n  \
             60000000 00043b40 00000000 00000000 00000000 00000001\n  \
             00000000 00000000 00000000 00000002 abababab \n"
        );
        assert_eq!(
            text("c, CONTENTS true, NBYTES 6", &p).expect("printed"),
            "c: ::0.0.0.1 -> ::0.0.0.2 plen 4, next 59, hlim 64\n  60000000 0004\n"
        );
        assert_eq!(
            text("c, CONTENTS true, NBYTES 24", &p).expect("printed"),
            "c: ::0.0.0.1 -> ::0.0.0.2 plen 4, next 59, hlim 64\n  \
             60000000 00043b40 00000000 00000000 00000000 00000001\n  \n"
        );
    }
}
