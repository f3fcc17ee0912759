//! Click's ControlSocket protocol as a client speaks it: arbitrary bytes
//! as the connection's input, served against handlers of one element.
//! Must never panic, and must answer within the protocol's limits.
#![no_main]

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use libfuzzer_sys::fuzz_target;
use pronto_runtime::controlsocket::{serve_stream, Handlers, MAX_DATA};
use pronto_runtime::CallError;

/// Element `e` with a handler `v` that reads back what was written.
struct Echo(Mutex<String>);

impl Handlers for Echo {
    fn read(&self, h: &str, _args: &str) -> Result<String, CallError> {
        match h {
            "e.v" => Ok(self.0.lock().map(|v| v.clone()).unwrap_or_default()),
            "e.handlers" => Ok("v\trw\n".into()),
            _ => Err(CallError::NoElement(h.to_string())),
        }
    }
    fn write(&self, h: &str, value: &str) -> Result<(), CallError> {
        match h {
            "e.v" => {
                if let Ok(mut v) = self.0.lock() {
                    *v = value.to_string();
                }
                Ok(())
            }
            "e.bad" => Err(CallError::Failed("e.bad".into(), "refused".into())),
            _ => Err(CallError::NoElement(h.to_string())),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let h = Echo(Mutex::new(String::new()));
    let readonly = data.first().is_some_and(|b| b & 1 == 1);
    let mut out = Vec::new();
    let _ = serve_stream(data, &mut out, &h, readonly, MAX_DATA, &AtomicBool::new(false));
    assert!(out.starts_with(b"Click::ControlSocket/1.3\r\n"));
});
