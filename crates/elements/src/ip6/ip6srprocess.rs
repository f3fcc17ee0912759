//! `IP6SRProcess`: the SRv6 End behaviour (FastClick's element).

use pronto_packet::{Batch, Packet};

use super::ip6srdecap::find_srh;
use crate::args::Ip6;
use crate::util::cfg_err;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, FromArg, HandlerError, HandlerInfo,
    Out, Spec, FIELD_DST_IP, FIELD_OTHER,
};

/// Moves IPv6 packets to their next segment.
pub struct IP6SRProcess {
    sids: Vec<[u8; 16]>,
    noutputs: usize,
    drops: u64,
}

impl IP6SRProcess {
    /// FastClick's description of the class.
    pub const SPEC: Spec = Spec::new("IP6SRProcess")
        .ports("1/1-2")
        .processing("a/a")
        .profile(
            ActionProfile::reads(FIELD_DST_IP | FIELD_OTHER)
                .writes(FIELD_DST_IP | FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "IP6SRProcess([ADDR, ...])\n\n\
             Applies the SRv6 End behaviour (RFC 8986 section 4.1) to IPv6 packets with a\n\
             Segment Routing Header (RFC 8754): Segments Left is decremented and the\n\
             destination becomes the segment list entry it then names; the destination\n\
             annotation is set to it. Upper-layer checksums are left alone (their\n\
             pseudo-header uses the final destination). With ADDRs (the local SIDs), only\n\
             packets whose destination is one of them are processed; others leave on\n\
             output 0 unchanged. FastClick accepts ADDRs but ignores them and processes\n\
             every packet, assuming the SRH follows the IPv6 header; pronto finds it in\n\
             the extension-header chain.\n\n\
             A packet with Segments Left 0, or without an SRH, is for the upper layer: it\n\
             leaves unchanged on output 1 if there is one, else on output 0 (FastClick\n\
             decrements past 0).\n\n\
             Dropped and counted: packets too short for an IPv6 header, of another\n\
             version, whose extension-header chain runs past the packet, and SRHs that\n\
             run past the packet, whose segment list (Last Entry) does not fit their\n\
             length, or whose Segments Left exceeds Last Entry.\n\n\
             Ports: 1 input; 1 or 2 outputs (agnostic).\n\
             Handlers:\n  drops (read)  packets dropped",
        );

    /// Configures an `IP6SRProcess`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let mut sids = Vec::new();
        for s in a.rest() {
            let v = Ip6::from_arg(&s).map_err(|e| cfg_err(format!("ADDR: {e}, found `{s}`")))?;
            sids.push(v.0);
        }
        a.finish()?;
        Ok(Box::new(IP6SRProcess {
            sids,
            noutputs: ctx.noutputs,
            drops: 0,
        }))
    }

    /// The output, or `None` to drop.
    fn process(&self, p: &mut Packet) -> Option<usize> {
        let upper = if self.noutputs > 1 { 1 } else { 0 };
        let d = p.data();
        if !self.sids.is_empty() && d.len() >= 40 && !self.sids.iter().any(|s| s[..] == d[24..40]) {
            return Some(0);
        }
        let Some(s) = find_srh(d).ok()? else {
            return Some(upper);
        };
        if s.segments_left == 0 {
            return Some(upper);
        }
        let sl = s.segments_left - 1;
        let dst = s.segment(d, sl);
        let d = p.data_mut();
        d[s.offset + 3] = sl;
        d[24..40].copy_from_slice(&dst);
        p.set_dst_ip6_anno(dst);
        Some(0)
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let r = self.process(p);
        if r.is_none() {
            self.drops += 1;
        }
        r
    }
}

impl Element for IP6SRProcess {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}
