//! `Print`: prints packet contents to standard error.

use std::fmt::Write as _;
use std::io::Write as _;

use pronto_packet::{Batch, Packet, ANNO_SIZE};

use super::shared::{handler_value, unparse_timestamp};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// What part of the data to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Contents {
    None,
    Hex,
    Ascii,
}

/// Prints a line per packet (label, length, up to MAXLENGTH data bytes)
/// to standard error and passes the packet on.
pub struct Print {
    label: String,
    bytes: i32,
    contents: Contents,
    timestamp: bool,
    print_anno: bool,
    headroom: bool,
    active: bool,
    line: String,
}

impl Print {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Print")
        .printing()
        .ports("1/1")
        .processing("a/a")
        .keywords(&[
            "LABEL",
            "MAXLENGTH",
            "LENGTH",
            "NBYTES",
            "CONTENTS",
            "TIMESTAMP",
            "PRINTANNO",
            "ACTIVE",
            "HEADROOM",
        ])
        .profile(ActionProfile::reads(crate::FIELD_PAYLOAD))
        .doc(
            "Print([LABEL, MAXLENGTH, KEYWORDS])\n\n\
             Prints up to MAXLENGTH bytes of data from each packet, in hex,\n\
             preceded by the LABEL text, to standard error. Default MAXLENGTH is\n\
             24; a negative MAXLENGTH prints the whole packet.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  \
             MAXLENGTH  as the argument (LENGTH and NBYTES are older names)\n  \
             CONTENTS   NONE, HEX or ASCII (default HEX)\n  \
             TIMESTAMP  boolean; print each packet's timestamp (default false)\n  \
             PRINTANNO  boolean; print the annotation bytes (default false)\n  \
             HEADROOM   boolean; print headroom and tailroom (default false)\n  \
             ACTIVE     boolean; if false, print nothing (default true)\n\
             Handlers:\n  active (read/write)",
        );

    /// Configures a `Print`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(Self::new(ctx)?))
    }

    fn new(ctx: &ConfigCtx<'_>) -> Result<Print, ConfigError> {
        let mut a = ctx.args();
        let label: String = a.read_p("LABEL")?.unwrap_or_default();
        let mut bytes: i32 = a.read_p("MAXLENGTH")?.unwrap_or(24);
        if let Some(b) = a.read("LENGTH")? {
            bytes = b;
        }
        if let Some(b) = a.read("NBYTES")? {
            bytes = b;
        }
        let contents: String = a.read_or("CONTENTS", "HEX".to_string())?;
        let timestamp = a.read_or("TIMESTAMP", false)?;
        let print_anno = a.read_or("PRINTANNO", false)?;
        let active = a.read_or("ACTIVE", true)?;
        let headroom = a.read_or("HEADROOM", false)?;
        a.finish()?;
        let contents = match pronto_lang::args::parse_bool(&contents) {
            Ok(true) => Contents::Hex,
            Ok(false) => Contents::None,
            Err(_) => match contents.to_uppercase().as_str() {
                "NONE" => Contents::None,
                "HEX" => Contents::Hex,
                "ASCII" => Contents::Ascii,
                other => {
                    return Err(ConfigError::new(format!(
                        "bad contents value '{other}'; should be 'NONE', 'HEX', or 'ASCII'"
                    )))
                }
            },
        };
        Ok(Print {
            label,
            bytes,
            contents,
            timestamp,
            print_anno,
            headroom,
            active,
            line: String::with_capacity(256),
        })
    }

    /// Formats the line for `p` into `s` (without a newline).
    fn format(&self, p: &Packet, s: &mut String) {
        s.clear();
        let len = p.len();
        let mut bytes = if self.contents == Contents::None {
            0
        } else {
            self.bytes
        };
        if bytes < 0 || (len as i64) < bytes as i64 {
            bytes = len as i32;
        }
        let mut sep = "";
        if !self.label.is_empty() {
            s.push_str(&self.label);
            sep = ": ";
        }
        if self.timestamp {
            s.push_str(sep);
            s.push_str(&unparse_timestamp(p.timestamp_ns()));
            sep = ": ";
        }
        let _ = write!(s, "{sep}{len:4}");
        if self.headroom {
            let _ = write!(s, " (h{} t{})", p.headroom(), p.tailroom());
        }
        if self.print_anno {
            s.push_str(" | ");
            for b in &p.anno_bytes()[..ANNO_SIZE] {
                let _ = write!(s, "{b:02x}");
            }
        }
        if bytes > 0 {
            s.push_str(" | ");
            let data = &p.data()[..bytes as usize];
            match self.contents {
                Contents::Hex => crate::util::push_hex(s, data, 0),
                Contents::Ascii => crate::util::push_ascii(s, data, 0),
                Contents::None => {}
            }
        }
    }
}

impl Element for Print {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
        if !self.active {
            return;
        }
        let mut line = std::mem::take(&mut self.line);
        let stderr = std::io::stderr();
        let mut w = stderr.lock();
        for p in batch.iter() {
            self.format(p, &mut line);
            line.push('\n');
            let _ = w.write_all(line.as_bytes());
            if crate::chatter::listening() {
                crate::chatter::copy(&line);
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
                self.active = handler_value(value, "active: expected boolean")?;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    fn line(cfg: &str, p: &Packet) -> String {
        let ctx = crate::ConfigCtx {
            name: "p",
            config: cfg,
            ninputs: 1,
            noutputs: 1,
            base_dir: std::path::Path::new("."),
            keywords: Print::SPEC.keywords,
            output_push: &[true],
            input_push: &[true],
            peers: &crate::NoPeers,
        };
        let pr = Print::new(&ctx).expect("ok");
        let mut s = String::new();
        pr.format(p, &mut s);
        s
    }

    #[test]
    fn hex_format() {
        let pool = Pool::new(8).expect("pool");
        // 10 bytes: 00 01 02 ... 09.
        let p = t::pkt(&pool, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(line("x", &p), "x:   10 | 00010203 04050607 0809");
        assert_eq!(line("", &p), "  10 | 00010203 04050607 0809");
        assert_eq!(line("x, 5", &p), "x:   10 | 00010203 04");
        assert_eq!(line("x, CONTENTS NONE", &p), "x:   10");
    }

    #[test]
    fn ascii_and_timestamp() {
        let pool = Pool::new(8).expect("pool");
        let mut p = t::pkt(&pool, b"Hello, world\x01");
        p.set_timestamp_ns(1_500_000_000);
        assert_eq!(line("a, CONTENTS ASCII", &p), "a:   13 |  Hello, w orld.");
        assert_eq!(line("a, 0, TIMESTAMP true", &p), "a: 1.500000:   13");
    }

    #[test]
    fn configure_errors_and_handler() {
        let r = t::configure(
            Print::SPEC.keywords,
            Print::configure,
            "x, CONTENTS bin",
            1,
            1,
        );
        assert_eq!(
            t::config_err(r),
            "bad contents value 'BIN'; should be 'NONE', 'HEX', or 'ASCII'"
        );
        let mut e = t::configure(
            Print::SPEC.keywords,
            Print::configure,
            "x, ACTIVE false",
            1,
            1,
        )
        .expect("ok");
        assert_eq!(t::read(e.as_ref(), "active"), "false");
        let pool = Pool::new(8).expect("pool");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        assert_eq!(out[0].len(), 1);
    }
}
