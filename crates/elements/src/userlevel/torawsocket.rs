//! `ToRawSocket`: Click's deprecated sending half of `RawSocket`.

use super::rawsocket::{rawsocket_doc_body, RawSocket, KEYWORDS};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// A `RawSocket` with pull ports (Click keeps the class for old
/// configurations).
pub struct ToRawSocket;

impl ToRawSocket {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ToRawSocket")
        .ports("0-1/0-1")
        .processing("l/l")
        .flow("x/y")
        .keywords(KEYWORDS)
        .profile(ActionProfile::NONE.dropping())
        .doc(concat!(
            "ToRawSocket(TYPE [, PORT] [, KEYWORDS])\n\n\
             Sends the IPv4 packets it pulls through a raw IP socket: RawSocket\n\
             with a pull input, kept for old configurations (Click's equivalent\n\
             of a RawSocket with no outputs). Its output, if any, is pull and\n\
             gives nothing: received packets are not kept.\n\n\
             Ports: 0 or 1 pull input; 0 or 1 pull output.\n\n",
            rawsocket_doc_body!()
        ));

    /// Configures a `ToRawSocket`: a `RawSocket` under another name.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut s = RawSocket::open(ctx, "ToRawSocket")?;
        s.no_receive();
        Ok(Box::new(s))
    }
}
