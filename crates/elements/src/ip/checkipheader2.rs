//! `CheckIPHeader2`: `CheckIPHeader` without the checksum test.

use pronto_packet::Batch;

use crate::ip::checkipheader::{IpChecker, KEYWORDS};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_DST_IP, FIELD_OTHER, FIELD_SRC_IP,
};

/// Checks IP headers like `CheckIPHeader`, but does not verify the
/// checksum unless `CHECKSUM true` is given.
pub struct CheckIPHeader2 {
    check: IpChecker,
}

impl CheckIPHeader2 {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CheckIPHeader2")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(KEYWORDS)
        .profile(ActionProfile::reads(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER).dropping())
        .doc(
            "CheckIPHeader2([OFFSET, KEYWORDS])\n\n\
             Like CheckIPHeader, but does not check the IP header checksum (CHECKSUM\n\
             defaults to false). Checks length, version, header length, IP length and\n\
             source address; marks the IP header, trims padding to the IP length and\n\
             sets the destination IP annotation. Bad packets go to output 1 if it\n\
             exists, else are dropped.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs.\n\
             Keywords: OFFSET, INTERFACES, BADSRC, GOODDST, CHECKSUM, VERBOSE, DETAILS\n\
             (as CheckIPHeader).\n\
             Handlers:\n  drops (read)\n  drop_details (read, with DETAILS)",
        );

    /// Configures a `CheckIPHeader2`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(CheckIPHeader2 {
            check: IpChecker::configure(ctx, false)?,
        }))
    }
}

impl Element for CheckIPHeader2 {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let c = &mut self.check;
        push_each(batch, out, |p, _| c.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        self.check.counters(c);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        self.check.handlers()
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        self.check.read_handler(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn checksum_not_checked() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(KEYWORDS, CheckIPHeader2::configure, "", 1, 2).expect("configures");
        let mut p = ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 4);
        p[10] ^= 0x55; // checksum now wrong
        let mut v = p.clone();
        v[0] = 0x55; // bad version still caught
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &p), pkt(&pool, &v)], 2);
        assert_eq!((outs[0].len(), outs[1].len()), (1, 1));
        assert_eq!(outs[0][0].dst_ip_anno(), [2, 2, 2, 2]);
        assert_eq!(read(e.as_ref(), "drops"), "1");
        let mut e = configure(KEYWORDS, CheckIPHeader2::configure, "CHECKSUM true", 1, 2)
            .expect("configures");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &p)], 2);
        assert_eq!(outs[1].len(), 1);
    }
}
