//! `SetPacketType`: sets the packet type annotation.

use pronto_packet::{Batch, PacketType};

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Out, Spec};

/// Sets each packet's type annotation (HOST, BROADCAST, ...).
pub struct SetPacketType {
    ptype: PacketType,
}

fn parse_type(s: &str) -> Option<PacketType> {
    Some(match s.to_ascii_uppercase().as_str() {
        "HOST" => PacketType::Host,
        "BROADCAST" => PacketType::Broadcast,
        "MULTICAST" => PacketType::Multicast,
        "OTHERHOST" => PacketType::OtherHost,
        "OUTGOING" => PacketType::Outgoing,
        "LOOPBACK" => PacketType::Loopback,
        _ => return None,
    })
}

fn unparse_type(t: PacketType) -> &'static str {
    match t {
        PacketType::Host => "HOST",
        PacketType::Broadcast => "BROADCAST",
        PacketType::Multicast => "MULTICAST",
        PacketType::OtherHost => "OTHERHOST",
        PacketType::Outgoing => "OUTGOING",
        PacketType::Loopback => "LOOPBACK",
        PacketType::FastRoute => "FASTROUTE",
    }
}

impl SetPacketType {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetPacketType")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["TYPE"])
        .profile(ActionProfile::NONE)
        .doc(
            "SetPacketType(TYPE)\n\n\
             Sets each packet's packet type annotation to TYPE: HOST, BROADCAST,\n\
             MULTICAST, OTHERHOST, OUTGOING or LOOPBACK (any case).\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  type (read)",
        );

    /// Configures a `SetPacketType`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let t: String = a.read_mp("TYPE")?;
        a.finish()?;
        let ptype = parse_type(&t)
            .ok_or_else(|| ConfigError::new(format!("unrecognized packet type '{t}'")))?;
        Ok(Box::new(SetPacketType { ptype }))
    }
}

impl Element for SetPacketType {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            p.annotations_mut().packet_type = self.ptype;
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("type")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, crate::HandlerError> {
        match name {
            "type" => Ok(unparse_type(self.ptype).to_string()),
            _ => Err(crate::HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn sets_the_type() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            SetPacketType::SPEC.keywords,
            SetPacketType::configure,
            "broadcast",
            1,
            1,
        )
        .expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        assert_eq!(out[0][0].annotations().packet_type, PacketType::Broadcast);
        assert_eq!(t::read(e.as_ref(), "type"), "BROADCAST");
        let r = t::configure(
            SetPacketType::SPEC.keywords,
            SetPacketType::configure,
            "x",
            1,
            1,
        );
        assert_eq!(t::config_err(r), "unrecognized packet type 'x'");
    }
}
