//! `ToSocket`: Click's deprecated sending half of `Socket`.

use super::socket::{socket_doc_body, Socket, KEYWORDS};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// A `Socket` with pull ports only (Click keeps the class for old
/// configurations).
pub struct ToSocket;

impl ToSocket {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ToSocket")
        .ports("0-1/0-1")
        .processing("l/l")
        .flow("x/y")
        .keywords(KEYWORDS)
        .profile(ActionProfile::NONE.dropping())
        .doc(concat!(
            "ToSocket(TYPE, ADDR, PORT [, KEYWORDS])  (TCP, UDP)\n\
             ToSocket(TYPE, FILENAME [, KEYWORDS])  (UNIX, UNIX_DGRAM)\n\n\
             Sends the packets it pulls to a socket: Socket with a pull input,\n\
             kept for old configurations (Click deprecates it, and so does\n\
             pronto: configuring one warns `ToSocket is deprecated, use Socket\n\
             instead'). With no outputs it is a client unless CLIENT false is\n\
             given. Its output, if any, is pull (Click's declaration) and gives\n\
             nothing: received data is not kept.\n\n\
             Ports: 0 or 1 pull input; 0 or 1 pull output.\n\n",
            socket_doc_body!()
        ));

    /// Configures a `ToSocket`: a `Socket` under another name.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut s = Socket::open(ctx, "ToSocket")?;
        s.no_receive();
        s.warn("ToSocket is deprecated, use Socket instead");
        Ok(Box::new(s))
    }
}
