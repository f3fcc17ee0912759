//! `Clipboard`: copies byte ranges from packets on input 0 into packets on
//! input 1.

use pronto_packet::Batch;

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Out, PullFrom, Spec, FIELD_PAYLOAD,
};

/// Packets on input 0 are copied from (and leave on output 0); packets on
/// input 1 are pasted into (and leave on output 1).
pub struct Clipboard {
    ranges: Vec<(usize, usize)>,
    clipboard: Vec<u8>,
    min_length: usize,
    short: u64,
}

impl Clipboard {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Clipboard")
        .ports("2/2")
        .processing("a/a")
        .flow("#/#")
        .flags("S0")
        .profile(ActionProfile::reads(FIELD_PAYLOAD).writes(FIELD_PAYLOAD))
        .doc(
            "Clipboard(OFFSET/LENGTH, ...)\n\n\
             Copies the given byte ranges of each packet arriving on input 0 into\n\
             its clipboard, and pastes the clipboard over the same ranges of each\n\
             packet arriving on input 1. Packets leave unchanged otherwise: input 0\n\
             to output 0, input 1 to output 1. A packet on input 1 shorter than the\n\
             ranges need is left as it is; so is the clipboard when a packet on\n\
             input 0 is too short (counted in `short`).\n\n\
             Ports: 2 inputs, 2 outputs (agnostic; input i goes to output i).\n\
             Handlers:\n  short (read)  packets too short to copy from or paste into",
        );

    /// Configures a `Clipboard`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut ranges = Vec::new();
        let mut size = 0;
        let mut min_length = 0;
        for (k, arg) in pronto_lang::args::split_args(ctx.config).iter().enumerate() {
            let slash = arg
                .find('/')
                .filter(|&i| i > 0 && i + 1 < arg.len())
                .ok_or_else(|| {
                    ConfigError::new(format!("range {k}: expected '/' between offset and length"))
                })?;
            let num = |s: &str| pronto_lang::args::parse_usize(s.trim());
            let (Ok(off), Ok(len)) = (num(&arg[..slash]), num(&arg[slash + 1..])) else {
                return Err(ConfigError::new(format!(
                    "range {k}: invalid offset or length"
                )));
            };
            ranges.push((off, len));
            size += len;
            min_length = min_length.max(off + len);
        }
        Ok(Box::new(Clipboard {
            ranges,
            clipboard: vec![0; size],
            min_length,
            short: 0,
        }))
    }
}

impl Element for Clipboard {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let min = self.min_length;
        if port == 0 {
            for p in batch.iter() {
                let d = p.data();
                if d.len() < min {
                    self.short += 1;
                    continue;
                }
                let mut at = 0;
                for &(off, len) in &self.ranges {
                    self.clipboard[at..at + len].copy_from_slice(&d[off..off + len]);
                    at += len;
                }
            }
        } else {
            for p in batch.iter_mut() {
                if p.len() < min {
                    self.short += 1;
                    continue;
                }
                let d = p.data_mut();
                let mut at = 0;
                for &(off, len) in &self.ranges {
                    d[off..off + len].copy_from_slice(&self.clipboard[at..at + len]);
                    at += len;
                }
            }
        }
        out.pass(port);
    }

    fn pull_from(&mut self, port: usize) -> PullFrom {
        PullFrom::ProcessInput(port)
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("short")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, crate::HandlerError> {
        match name {
            "short" => Ok(self.short.to_string()),
            _ => Err(crate::HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn copies_then_pastes() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            Clipboard::SPEC.keywords,
            Clipboard::configure,
            "0/1, 2/1",
            2,
            2,
        )
        .expect("ok");
        let mut ctrl = Control::default();
        let out = t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, b"Sam")],
            2,
            0,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[0]), vec![b"Sam".to_vec()]);
        let out = t::push_at(
            e.as_mut(),
            &pool,
            1,
            vec![t::pkt(&pool, b".a. x")],
            2,
            0,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[1]), vec![b"Sam x".to_vec()]);
        let out = t::push_at(
            e.as_mut(),
            &pool,
            1,
            vec![t::pkt(&pool, b"x")],
            2,
            0,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[1]), vec![b"x".to_vec()]);
        assert_eq!(t::read(e.as_ref(), "short"), "1");
        assert_eq!(e.pull_from(1), PullFrom::ProcessInput(1));
        let r = t::configure(Clipboard::SPEC.keywords, Clipboard::configure, "0-1", 2, 2);
        assert_eq!(
            t::config_err(r),
            "range 0: expected '/' between offset and length"
        );
    }
}
