//! `FromRawSocket`: Click's deprecated receiving half of `RawSocket`.

use super::rawsocket::{rawsocket_doc_body, RawSocket, KEYWORDS};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// A `RawSocket` with push ports (Click keeps the class for old
/// configurations).
pub struct FromRawSocket;

impl FromRawSocket {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FromRawSocket")
        .ports("0-1/0-1")
        .processing("h/h")
        .flow("x/y")
        .keywords(KEYWORDS)
        .profile(ActionProfile::NONE.dropping())
        .doc(concat!(
            "FromRawSocket(TYPE [, PORT] [, KEYWORDS])\n\n\
             Reads IPv4 packets from a raw IP socket and pushes them out:\n\
             RawSocket with push ports, kept for old configurations (Click's\n\
             equivalent of a RawSocket with no inputs). An input, if connected,\n\
             is push and sends as RawSocket's does.\n\n\
             Ports: 0 or 1 push input; 0 or 1 push output.\n\n",
            rawsocket_doc_body!()
        ));

    /// Configures a `FromRawSocket`: a `RawSocket` under another name.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(RawSocket::open(ctx, "FromRawSocket")?))
    }
}
