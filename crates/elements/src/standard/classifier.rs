//! `Classifier`: routes packets by byte patterns.

use pronto_classify::Program;
use pronto_packet::Batch;

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_OTHER, FIELD_PAYLOAD,
};

/// Sends each packet to the output of the first pattern it matches;
/// packets matching no pattern are dropped.
pub struct Classifier {
    prog: Program,
    drops: u64,
}

impl Classifier {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Classifier")
        .ports("1/-")
        .processing("h/h")
        .profile(
            ActionProfile::reads(crate::FIELDS_5TUPLE | FIELD_OTHER | FIELD_PAYLOAD).dropping(),
        )
        .doc(
            "Classifier(PATTERN1, ..., PATTERNN)\n\n\
             Classifies packets by contents. Output i is associated with\n\
             PATTERNi; each packet goes to the output of the first pattern it\n\
             matches, and is dropped if it matches none. A pattern is a list of\n\
             space-separated clauses `OFFSET/VALUE` or `OFFSET/VALUE%MASK`\n\
             (offset decimal from the data start, value and mask in hex, `?`\n\
             for any nibble), each optionally preceded by `!`. The pattern `-`\n\
             matches every packet. Example:\n\n  \
             Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -)\n\n\
             Ports: 1 push input, one push output per pattern.\n\
             Handlers:\n  program (read)  the compiled decision program, in Click's form\n  \
             drops (read)    packets matching no pattern",
        );

    /// Configures a `Classifier`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let pats = a.rest();
        a.finish()?;
        if pats.len() != ctx.noutputs {
            return Err(ConfigError::new(format!(
                "need {} arguments, one per output port",
                ctx.noutputs
            )));
        }
        let refs: Vec<&str> = pats.iter().map(String::as_str).collect();
        let prog = Program::classifier(&refs).map_err(|e| ConfigError::new(e.message))?;
        Ok(Box::new(Classifier { prog, drops: 0 }))
    }
}

impl Element for Classifier {
    fn one_for_one(&self) -> bool {
        true
    }

    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        crate::util::classify_and_route(&self.prog, batch, out, |_| 0, &mut self.drops);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_match", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("program"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "program" => Ok(self.prog.program_text()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    fn frame(ethertype: [u8; 2], b20: u8) -> Vec<u8> {
        let mut f = vec![0u8; 22];
        f[0..6].copy_from_slice(&[0xff; 6]); // destination MAC
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]); // source MAC
        f[12..14].copy_from_slice(&ethertype); // EtherType
        f[20] = 0; // ARP opcode high byte
        f[21] = b20; // ARP opcode low byte
        f
    }

    #[test]
    fn routes_first_match() {
        let pool = Pool::new(32).expect("pool");
        let cfg = "12/0806 20/0001, 12/0806 20/0002, 12/0800, -";
        let mut e = t::configure(&[], Classifier::configure, cfg, 1, 4).expect("ok");
        let pk = vec![
            t::pkt(&pool, &frame([8, 6], 1)),       // ARP request -> 0
            t::pkt(&pool, &frame([8, 6], 2)),       // ARP reply -> 1
            t::pkt(&pool, &frame([8, 0], 2)),       // IP -> 2
            t::pkt(&pool, &frame([0x86, 0xdd], 0)), // IPv6 -> 3
        ];
        let out = t::push(e.as_mut(), &pool, pk, 4);
        for (i, o) in out.iter().enumerate() {
            assert_eq!(o.len(), 1, "output {i}");
        }
        assert_eq!(out[0][0].data()[21], 1);
        assert_eq!(out[1][0].data()[21], 2);
        assert_eq!(out[2][0].data()[13], 0);
        assert_eq!(out[3][0].data()[12], 0x86);
    }

    #[test]
    fn unmatched_dropped() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(&[], Classifier::configure, "12/0800", 1, 1).expect("ok");
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &frame([8, 6], 1)), t::pkt(&pool, &[0; 4])],
            1,
        );
        assert!(out[0].is_empty());
        drop(out);
        assert_eq!(pool.available(), 8);
    }

    #[test]
    fn errors() {
        let r = t::configure(&[], Classifier::configure, "12/0800, -", 1, 3);
        assert_eq!(t::config_err(r), "need 3 arguments, one per output port");
        let r = t::configure(&[], Classifier::configure, "12/0800, 12/zz", 1, 2);
        let m = t::config_err(r);
        assert!(m.starts_with("Classifier pattern 1: "), "{m}");
    }
}
