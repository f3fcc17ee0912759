//! `FromSocket`: Click's deprecated receiving half of `Socket`.

use super::socket::{socket_doc_body, Socket, KEYWORDS};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// A `Socket` with push ports only (Click keeps the class for old
/// configurations).
pub struct FromSocket;

impl FromSocket {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FromSocket")
        .ports("0-1/0-1")
        .processing("h/h")
        .flow("x/y")
        .keywords(KEYWORDS)
        .profile(ActionProfile::NONE.dropping())
        .doc(concat!(
            "FromSocket(TYPE, ADDR, PORT [, KEYWORDS])  (TCP, UDP)\n\
             FromSocket(TYPE, FILENAME [, KEYWORDS])  (UNIX, UNIX_DGRAM)\n\n\
             Reads data from a socket and pushes it out: Socket with push ports\n\
             only, kept for old configurations (Click deprecates it, and so does\n\
             pronto: configuring one warns `FromSocket is deprecated, use Socket\n\
             instead'). It is a server unless CLIENT is set; an input, if\n\
             connected, is push and writes to the socket as Socket's does.\n\n\
             Ports: 0 or 1 push input; 0 or 1 push output.\n\n",
            socket_doc_body!()
        ));

    /// Configures a `FromSocket`: a `Socket` under another name.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut s = Socket::open(ctx, "FromSocket")?;
        s.warn("FromSocket is deprecated, use Socket instead");
        Ok(Box::new(s))
    }
}
