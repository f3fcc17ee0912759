//! `Resize`: adds or removes bytes at a packet's head and tail.

use pronto_packet::{Batch, MAX_PACKET};

use super::shared::handler_value;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_PAYLOAD,
};

/// Adds HEAD bytes in front and TAIL bytes at the end (negative values
/// remove bytes, never more than the packet has).
pub struct Resize {
    head: i32,
    tail: i32,
    drops: u64,
}

impl Resize {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Resize")
        .ports("1/1")
        .processing("a/a")
        .flags("S0")
        .keywords(&["HEAD", "TAIL"])
        .profile(
            ActionProfile::reads(FIELD_PAYLOAD)
                .writes(FIELD_PAYLOAD)
                .reshaping(),
        )
        .doc(
            "Resize([HEAD, TAIL])\n\n\
             Adds HEAD bytes in front of each packet's data and TAIL bytes after it;\n\
             a negative HEAD or TAIL removes bytes (at most all of them). Bytes added\n\
             at the head are what the packet buffer held there (as in Click), bytes\n\
             added at the tail are zero. A packet that cannot grow\n\
             (no headroom, or past pronto's largest packet) is dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  \
             head, tail (read/write)  the amounts\n  \
             drops (read)             packets that could not grow",
        );

    /// Configures a `Resize`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let head: i32 = a.read_p("HEAD")?.unwrap_or(0);
        let tail: i32 = a.read_p("TAIL")?.unwrap_or(0);
        a.finish()?;
        Ok(Box::new(Resize {
            head,
            tail,
            drops: 0,
        }))
    }
}

impl Element for Resize {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let (head, tail) = (self.head, self.tail);
        let mut drops = 0;
        batch.retain_or(
            |p| {
                if head > 0 {
                    let n = head as usize;
                    if p.len() + n > MAX_PACKET {
                        drops += 1;
                        return false;
                    }
                    // The new head bytes are what the buffer held there
                    // (Click leaves them uninitialized too).
                    match p.push(n) {
                        Some(_) => {}
                        None => {
                            drops += 1;
                            return false;
                        }
                    }
                } else if head < 0 {
                    p.pull(head.unsigned_abs().min(p.len() as u32) as usize);
                }
                if tail > 0 {
                    let n = tail as usize;
                    if p.len() + n > MAX_PACKET || !p.put_zeroed(n) {
                        drops += 1;
                        return false;
                    }
                } else if tail < 0 {
                    p.take(tail.unsigned_abs().min(p.len() as u32) as usize);
                }
                true
            },
            drop,
        );
        self.drops += drops;
        out.pass(0);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_room", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("head"),
            HandlerInfo::rw("tail"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "head" => Ok(self.head.to_string()),
            "tail" => Ok(self.tail.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "head" => self.head = handler_value(value, "head: expected integer")?,
            "tail" => self.tail = handler_value(value, "tail: expected integer")?,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    fn resize(cfg: &str, data: &[u8]) -> Vec<Vec<u8>> {
        let pool = Pool::new(8).expect("pool");
        let mut e =
            t::configure(Resize::SPEC.keywords, Resize::configure, cfg, 1, 1).expect("configures");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, data)], 1);
        t::bytes(&out[0])
    }

    #[test]
    fn grows_and_shrinks_both_ends() {
        assert_eq!(resize("HEAD -2", &[1, 2, 3, 4]), vec![vec![3, 4]]);
        assert_eq!(resize("+2, -1", &[1, 2, 3])[0][2..], [1, 2]);
        assert_eq!(resize("TAIL 2", &[7]), vec![vec![7, 0, 0]]);
        assert_eq!(resize("", &[5, 6]), vec![vec![5, 6]]);
        // Never more than the packet holds.
        assert_eq!(resize("HEAD -8", &[1, 2]), vec![Vec::<u8>::new()]);
        assert_eq!(resize("0, -9", &[1, 2]), vec![Vec::<u8>::new()]);
    }
}
