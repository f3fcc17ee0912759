//! `Block`: splits packets on their forward rate annotation.

use pronto_packet::Batch;

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// Click's forward rate annotation: a signed 32-bit value at byte 20.
pub const FWD_RATE_ANNO: usize = 20;
/// Click's reverse rate annotation: a signed 32-bit value at byte 24.
pub const REV_RATE_ANNO: usize = 24;

/// Reads a signed 32-bit annotation (host order, as Click stores it).
pub fn anno_s32(p: &pronto_packet::Packet, off: usize) -> i32 {
    let b = &p.anno_bytes()[off..off + 4];
    i32::from_ne_bytes(b.try_into().unwrap_or([0; 4]))
}

/// Packets whose forward rate annotation is at most THRESH (or any, with
/// THRESH 0) go to output 0, the others to output 1.
pub struct Block {
    thresh: i32,
}

impl Block {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Block")
        .ports("1/2")
        .processing("h/h")
        .keywords(&["THRESH"])
        .profile(ActionProfile::NONE)
        .doc(
            "Block(THRESH)\n\n\
             Sends packets whose forward rate annotation (a 32-bit signed value at\n\
             annotation byte 20, set by rate-measuring elements) is at most THRESH\n\
             to output 0, the others to output 1. THRESH 0 sends everything to\n\
             output 0.\n\n\
             Ports: 1 push input, 2 push outputs.\n\
             Handlers:\n  thresh (read/write)",
        );

    /// Configures a `Block`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let thresh: i32 = a.read_mp("THRESH")?;
        a.finish()?;
        Ok(Box::new(Block { thresh }))
    }
}

impl Element for Block {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let t = self.thresh;
        push_each(batch, out, |p, _| {
            Some(usize::from(t != 0 && anno_s32(p, FWD_RATE_ANNO) > t))
        });
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("thresh")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "thresh" => Ok(self.thresh.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "thresh" => {
                let args = pronto_lang::args::split_args(value);
                let [v] = args.as_slice() else {
                    return Err(HandlerError::BadValue("expecting 1 integer".into()));
                };
                self.thresh = pronto_lang::args::parse_i64(v)
                    .ok()
                    .and_then(|v| i32::try_from(v).ok())
                    .ok_or_else(|| HandlerError::BadValue("not an integer".into()))?;
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

    #[test]
    fn splits_on_the_forward_rate() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(Block::SPEC.keywords, Block::configure, "100", 1, 2).expect("ok");
        let mut fast = t::pkt(&pool, &[1]);
        fast.anno_bytes_mut()[FWD_RATE_ANNO..FWD_RATE_ANNO + 4]
            .copy_from_slice(&500i32.to_ne_bytes());
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[0]), fast], 2);
        assert_eq!(t::bytes(&out[0]), vec![vec![0]]);
        assert_eq!(t::bytes(&out[1]), vec![vec![1]]);
        assert!(e.write_handler("thresh", "1, 2").is_err());
        e.write_handler("thresh", "0").expect("thresh");
        assert_eq!(t::read(e.as_ref(), "thresh"), "0");
    }
}
