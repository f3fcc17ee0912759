//! Handler calls into a running router from other threads.
//!
//! [`Router::remote`] hands out a [`Remote`]: a cheap, cloneable handle
//! that any thread may use to call a read or write handler, or to halt the
//! router, while [`Router::run`] owns the router's thread. Calls queue on
//! the router's inbox and ring its doorbell (an eventfd); the task loop
//! answers them between rounds while busy (every 16th round, when it reads
//! the clock) and at once when idle, since the doorbell is among the
//! descriptors it waits on. A call costs the data plane one handler
//! invocation, never a lock on the hot path.
//!
//! A router that is not running answers nothing: calls wait until it runs
//! (or time out, see [`Remote::read_timeout`]).

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use crate::router::{CallError, Router};
use crate::threads::{Bell, Msg};

/// The router's end: its inbox and doorbell.
pub(crate) struct Inbox {
    pub(crate) rx: Receiver<Msg>,
    pub(crate) bell: Arc<Bell>,
    tx: Sender<Msg>,
}

/// A handle on a router, usable from any thread.
#[derive(Clone)]
pub struct Remote {
    tx: Sender<Msg>,
    bell: Arc<Bell>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Remote")
    }
}

/// How long a call waits for an answer unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl Remote {
    fn call(&self, read: bool, handler: &str, arg: &str, t: Duration) -> Result<String, CallError> {
        let (tx, rx) = mpsc::channel();
        let gone = || CallError::Failed(handler.to_string(), "the router has ended".into());
        self.tx
            .send(Msg::Call {
                read,
                handler: handler.to_string(),
                arg: arg.to_string(),
                reply: tx,
                bell: self.bell.clone(),
            })
            .map_err(|_| gone())?;
        self.bell.ring();
        match rx.recv_timeout(t) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(CallError::Failed(
                handler.to_string(),
                format!(
                    "no answer within {:.1} s (the router is not running, or is stuck)",
                    t.as_secs_f64()
                ),
            )),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(gone()),
        }
    }

    /// Calls read handler `handler` (`element.name` or a global one) with
    /// `params`.
    pub fn read(&self, handler: &str, params: &str) -> Result<String, CallError> {
        self.call(true, handler, params, DEFAULT_TIMEOUT)
    }

    /// [`Remote::read`], waiting at most `t` for the answer.
    pub fn read_timeout(
        &self,
        handler: &str,
        params: &str,
        t: Duration,
    ) -> Result<String, CallError> {
        self.call(true, handler, params, t)
    }

    /// Calls write handler `handler` with `value`.
    pub fn write(&self, handler: &str, value: &str) -> Result<(), CallError> {
        self.call(false, handler, value, DEFAULT_TIMEOUT)
            .map(|_| ())
    }

    /// [`Remote::write`], waiting at most `t` for the answer.
    pub fn write_timeout(&self, handler: &str, value: &str, t: Duration) -> Result<(), CallError> {
        self.call(false, handler, value, t).map(|_| ())
    }

    /// Ends the router's run at its next round, whatever its driver says
    /// (a `DriverManager` or script does not get to intercept it). Does
    /// not wait.
    pub fn halt(&self) {
        let _ = self.tx.send(Msg::Halt);
        self.bell.ring();
    }
}

impl Router {
    /// A handle through which other threads call this router's handlers
    /// and halt it while it runs.
    pub fn remote(&mut self) -> std::io::Result<Remote> {
        if let Some(i) = &self.inbox {
            return Ok(Remote {
                tx: i.tx.clone(),
                bell: i.bell.clone(),
            });
        }
        let (tx, rx) = mpsc::channel();
        let bell = Arc::new(Bell::new()?);
        let r = Remote {
            tx: tx.clone(),
            bell: bell.clone(),
        };
        self.inbox = Some(Box::new(Inbox { rx, bell, tx }));
        Ok(r)
    }

    /// Answers what waits in the remote inbox.
    pub(crate) fn serve_inbox(&mut self) {
        while let Some(msg) = self.inbox.as_ref().and_then(|i| i.rx.try_recv().ok()) {
            self.handle_msg(msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::RouterOptions;

    fn build(text: &str) -> Router {
        let mut sm = pronto_lang::SourceMap::new();
        let f = sm.add("t", text);
        let opts = pronto_lang::Options {
            defines: &[],
            is_primitive: &crate::is_known_class,
        };
        let (flat, _) = pronto_lang::parse_flat(&sm, f, &opts).expect("parses");
        Router::build(&flat, &sm, &RouterOptions::default()).expect("builds")
    }

    #[test]
    fn calls_from_another_thread_reach_a_running_router() {
        let (tx, rx) = mpsc::channel();
        let t = std::thread::spawn(move || {
            // Five packets, then the source rests: the count stays 5 and a
            // reset leaves exactly 0, however slow the machine.
            let mut r = build("c :: Counter; TimedSource(0.001s, LIMIT 5) -> c -> Discard;");
            tx.send(r.remote().expect("remote")).expect("send");
            r.run()
        });
        let remote = rx.recv().expect("remote");
        let t0 = std::time::Instant::now();
        loop {
            let n: u64 = remote
                .read("c.count", "")
                .expect("count")
                .parse()
                .expect("n");
            if n == 5 {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the counter never counted"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        remote.write("c.reset", "").expect("reset");
        let n: u64 = remote
            .read("c.count", "")
            .expect("count")
            .parse()
            .expect("n");
        assert_eq!(n, 0, "the count after a reset");
        assert_eq!(
            remote.read("c.nope", "").expect_err("missing").to_string(),
            "element `c` has no read handler `nope`"
        );
        assert_eq!(
            remote
                .read("zz.count", "")
                .expect_err("missing")
                .to_string(),
            "no element named `zz`"
        );
        remote.halt();
        t.join().expect("thread").expect("run ends cleanly");
        // The router is gone: calls fail at once, with a clear error.
        assert_eq!(
            remote.read("c.count", "").expect_err("gone").to_string(),
            "c.count: the router has ended"
        );
    }

    #[test]
    fn an_idle_router_answers_at_once() {
        let (tx, rx) = mpsc::channel();
        let t = std::thread::spawn(move || {
            // Nothing ever happens here: the router sleeps.
            let mut r = build("c :: Counter; Idle -> c -> Discard;");
            tx.send(r.remote().expect("remote")).expect("send");
            r.run()
        });
        let remote = rx.recv().expect("remote");
        std::thread::sleep(Duration::from_millis(100));
        for _ in 0..20 {
            assert_eq!(remote.read("c.count", "").expect("count"), "0");
        }
        remote.halt();
        t.join().expect("thread").expect("run");
    }
}
