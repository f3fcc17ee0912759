//! Test helpers for the `app` and `ethernet` elements: configure by hand,
//! drive with batches, make scratch files.
#![allow(dead_code)]

use pronto_packet::{Batch, Packet, Pool};

use crate::{ConfigCtx, ConfigError, Control, Element, Factory, Out, TaskStatus};

/// Configures `factory` with `config` and the given push (true) / pull
/// (false) ports, resolving file names against `dir`.
pub fn configure(
    keywords: &'static [&'static str],
    factory: Factory,
    config: &str,
    input_push: &[bool],
    output_push: &[bool],
    dir: &std::path::Path,
) -> Result<Box<dyn Element>, ConfigError> {
    let ctx = ConfigCtx {
        name: "e",
        config,
        ninputs: input_push.len(),
        noutputs: output_push.len(),
        base_dir: dir,
        keywords,
        output_push,
        input_push,
        peers: &crate::NoPeers,
    };
    factory(&ctx)
}

/// The configure error text.
pub fn config_err(r: Result<Box<dyn Element>, ConfigError>) -> String {
    match r {
        Ok(_) => panic!("configuration unexpectedly accepted"),
        Err(e) => e.message,
    }
}

/// A scratch directory for one test, removed with all in it when dropped
/// (a failing test's too). Derefs to its path.
pub struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh scratch directory, `pronto-el-TAG-PID-N` in the temporary
/// directory; gone when the returned guard is dropped.
pub fn scratch(tag: &str) -> Scratch {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "pronto-el-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    Scratch(d)
}

/// What one call emitted, per output port.
pub type Outputs = Vec<Vec<Packet>>;

fn collect(bufs: &mut [Batch], batch: &mut Batch, passed: Option<usize>) -> Outputs {
    let mut outs: Outputs = (0..bufs.len()).map(|_| Vec::new()).collect();
    if let Some(k) = passed {
        if let Some(o) = outs.get_mut(k) {
            o.extend(batch.drain());
        }
    }
    batch.clear();
    for (i, b) in bufs.iter_mut().enumerate() {
        outs[i].extend(b.drain());
    }
    outs
}

/// Pushes packets made from `frames` into input 0; `nout` outputs.
pub fn push(e: &mut dyn Element, pool: &Pool, frames: &[&[u8]], nout: usize, now: i64) -> Outputs {
    let mut batch = Batch::new();
    for f in frames {
        let _ = batch.push(pool.alloc_from(f).expect("pool has room"));
    }
    push_batch(e, pool, &mut batch, nout, now)
}

/// Pushes a batch into input 0; `nout` outputs.
pub fn push_batch(
    e: &mut dyn Element,
    pool: &Pool,
    batch: &mut Batch,
    nout: usize,
    now: i64,
) -> Outputs {
    let mut bufs: Vec<Batch> = (0..nout).map(|_| Batch::new()).collect();
    let mut ctrl = Control::default();
    let passed = {
        let mut out = Out::new(&mut bufs, pool, now, &mut ctrl);
        e.push(0, batch, &mut out);
        out.passed()
    };
    collect(&mut bufs, batch, passed)
}

/// Runs the element's task once; returns the status, what it emitted and
/// the control requests.
pub fn run_task(
    e: &mut dyn Element,
    pool: &Pool,
    nout: usize,
    now: i64,
) -> (TaskStatus, Outputs, Control) {
    let mut bufs: Vec<Batch> = (0..nout).map(|_| Batch::new()).collect();
    let mut ctrl = Control::default();
    let mut batch = Batch::new();
    let (st, passed) = {
        let mut out = Out::new(&mut bufs, pool, now, &mut ctrl);
        let st = e.run_task(&mut batch, &mut out);
        (st, out.passed())
    };
    let outs = collect(&mut bufs, &mut batch, passed);
    (st, outs, ctrl)
}
