//! `ProgressBar`: reads position and size handlers of other elements and
//! draws a progress bar on standard error when it is a terminal.
//!
//! A runtime class, like `QuitWatcher`: the element keeps the bar's state
//! and draws it ([`ProgressBar::draw`], a pure function of the values and
//! the time, tested on its own); the router reads the handlers it names
//! when its timer fires (`Router::check_progress_bar`).

use std::io::IsTerminal;

use pronto_elements::{
    ActionProfile, ClassEntry, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Spec,
};

/// Seconds without progress before the bar says it stalled.
const STALL_SECS: i64 = 5;
/// The longest bar.
const MAX_BAR: i64 = 240;

/// Click's states, in its order (`>= Done` means finished).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Status {
    First,
    Middle,
    Done,
    FirstDone,
    Dead,
}

/// Draws a progress bar; see the module documentation.
pub struct ProgressBar {
    pub(crate) size_handlers: Vec<String>,
    pub(crate) pos_handlers: Vec<String>,
    interval_ns: i64,
    delay_ns: i64,
    banner: String,
    active: bool,
    pub(crate) status: Status,
    have_size: bool,
    size: f64,
    last_pos: f64,
    last_time: i64,
    start_time: i64,
    stall_ns: i64,
    delay_time: i64,
    /// When the timer fires next (`None`: not scheduled).
    next: Option<i64>,
    due: bool,
    /// `mark_done` (true) or `mark_stopped` (false) waiting for the next
    /// draw.
    complete: Option<bool>,
}

/// The values the router read for one draw.
pub(crate) struct Values {
    /// The sum of the size handlers' values, and whether all were numbers
    /// (false with no size handler).
    pub size: (f64, bool),
    /// The same for the position handlers.
    pub pos: (f64, bool),
    /// Whether this process is in the terminal's foreground.
    pub foreground: bool,
    /// The terminal's width in columns.
    pub width: i64,
}

/// Sums handler values as Click does: every text that parses as a real
/// counts; `known` only if all did and there was at least one.
pub(crate) fn sum_values(texts: &[Option<String>]) -> (f64, bool) {
    let mut sum = 0.0;
    let mut all = !texts.is_empty();
    for t in texts {
        match t
            .as_deref()
            .and_then(|t| pronto_lang::args::parse_f64(t.trim()).ok())
        {
            Some(v) => sum += v,
            None => all = false,
        }
    }
    (sum, all)
}

/// Whether this process's group is the foreground group of its
/// controlling terminal (from /proc/self/stat: `pgrp` and `tpgid`).
pub(crate) fn foreground() -> bool {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return false;
    };
    // The command name (field 2) may hold blanks: count after its ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return false;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state, ppid, pgrp, session, tty_nr, tpgid.
    f.len() > 5 && f[2] == f[5]
}

/// The terminal width: `COLUMNS` if set, else 80.
pub(crate) fn width() -> i64 {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<i64>().ok())
        .filter(|&c| c > 0)
        .unwrap_or(80)
}

fn handler_list(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

impl ProgressBar {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ProgressBar")
        .ports("0/0")
        .processing("a/a")
        .keywords(&[
            "UPDATE",
            "BANNER",
            "ACTIVE",
            "DELAY",
            "CHECK_STDOUT",
            "FIXED_SIZE",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "ProgressBar(POSHANDLER [, SIZEHANDLER, KEYWORDS])\n\n\
             Draws a progress bar on standard error, if it is a terminal:\n\
             POSHANDLER's value (read every UPDATE) against SIZEHANDLER's (read\n\
             once, the first time), each a space-separated list of read handlers\n\
             whose values (nonnegative reals) are added. For example\n\
             `fd :: FromDump(big.pcap) -> ...; ProgressBar(fd.filepos,\n\
             fd.filesize);'. With a size the bar shows the percentage, stars\n\
             filled up to it, the position (K, M, G... above 99999) and the\n\
             estimated time left; without one a block of stars moves to and fro.\n\
             A handler that cannot be read, or whose value is not a number, makes\n\
             the value unknown (a bar of dashes).\n\n\
             Keywords:\n  \
             FIXED_SIZE    real: the size when there is no SIZEHANDLER\n  \
             BANNER        text printed before the bar\n  \
             UPDATE        seconds between redraws (default 0.25)\n  \
             ACTIVE        boolean: draw at all (default true)\n  \
             DELAY         seconds before the first draw (default 0)\n  \
             CHECK_STDOUT  boolean: draw nothing if standard output is a terminal\n\n\
             Differences from Click: the width is COLUMNS (default 80), not the\n\
             terminal's; time is the router's clock; handler names are checked\n\
             when read, not at configuration; at the end the last bar is redrawn\n\
             with the values last read.\n\n\
             Ports: none.\n\
             Handlers:\n  \
             mark_stopped, mark_done (write: finish the bar; mark_done sets the\n    \
             size to the position)\n  \
             pos (read: the position last drawn), size (read/write)\n  \
             active (read/write), banner (read/write)\n  \
             poshandler, sizehandler (read/write: the handler lists)\n  \
             reset (write: start again)",
        );

    fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let pos: String = a.read_mp("POSHANDLER")?;
        let size: Option<String> = a.read_p("SIZEHANDLER")?;
        let update: Option<f64> = a.read("UPDATE")?;
        let banner: Option<String> = a.read("BANNER")?;
        let active: bool = a.read_or("ACTIVE", true)?;
        let delay: Option<f64> = a.read("DELAY")?;
        let check_stdout: bool = a.read_or("CHECK_STDOUT", false)?;
        let fixed: Option<f64> = a.read("FIXED_SIZE")?;
        a.finish()?;
        let ms = |s: f64, kw: &str| -> Result<i64, ConfigError> {
            if s.is_finite() && s >= 0.0 {
                Ok((s * 1000.0).round() as i64 * 1_000_000)
            } else {
                Err(ConfigError::new(format!(
                    "{kw}: expected a nonnegative time in seconds"
                )))
            }
        };
        let pos_handlers = handler_list(&pronto_lang::args::unquote(&pos));
        if pos_handlers.is_empty() {
            return Err(ConfigError::new(
                "POSHANDLER: name at least one read handler (ELEMENT.HANDLER)",
            ));
        }
        let dead =
            !std::io::stderr().is_terminal() || (check_stdout && std::io::stdout().is_terminal());
        let mut pb = ProgressBar {
            size_handlers: size
                .map(|s| handler_list(&pronto_lang::args::unquote(&s)))
                .unwrap_or_default(),
            pos_handlers,
            interval_ns: ms(update.unwrap_or(0.25), "UPDATE")?,
            delay_ns: ms(delay.unwrap_or(0.0), "DELAY")?,
            banner: banner
                .map(|b| pronto_lang::args::unquote(&b).to_string())
                .unwrap_or_default(),
            active,
            status: if dead { Status::Dead } else { Status::First },
            have_size: fixed.is_some(),
            size: fixed.unwrap_or(-1.0),
            last_pos: 0.0,
            last_time: 0,
            start_time: 0,
            stall_ns: 0,
            delay_time: 0,
            next: None,
            due: false,
            complete: None,
        };
        if pb.active && pb.status != Status::Dead {
            pb.next = Some(i64::MIN);
        }
        Ok(Box::new(pb))
    }

    /// True once per firing of the timer: the router then reads the
    /// handlers and calls [`ProgressBar::fire`].
    pub(crate) fn take_due(&mut self) -> bool {
        std::mem::take(&mut self.due)
    }

    /// Whether the next draw reads the size handlers.
    pub(crate) fn needs_size(&self) -> bool {
        matches!(self.status, Status::First | Status::FirstDone) && !self.have_size
            || self.complete == Some(true)
    }

    /// One firing of the timer with the values read: the text to write on
    /// standard error, if any.
    pub(crate) fn fire(&mut self, v: &Values, now: i64) -> Option<String> {
        if let Some(full) = self.complete.take() {
            if self.status < Status::Done && self.active {
                if full {
                    self.have_size = true;
                    self.size = v.pos.0;
                }
                self.status = if self.status == Status::First {
                    Status::FirstDone
                } else {
                    Status::Done
                };
            } else {
                return None;
            }
        }
        self.draw(v, now)
    }

    /// Click's `run_timer`: sets up on the first run, then draws the bar
    /// for these values at `now` (ns) and schedules the next draw.
    pub(crate) fn draw(&mut self, v: &Values, now: i64) -> Option<String> {
        if !self.active || self.status == Status::Dead {
            return None;
        }
        if matches!(self.status, Status::First | Status::FirstDone) {
            if !self.have_size {
                self.have_size = v.size.1;
                self.size = v.size.0;
            }
            self.last_pos = 0.0;
            self.last_time = now;
            self.start_time = now;
            self.stall_ns = 0;
            self.delay_time = now + self.delay_ns;
            if self.status == Status::First {
                self.status = Status::Middle;
            }
        }
        if !v.foreground {
            self.next = Some(now + self.interval_ns);
            return None;
        }
        if now < self.delay_time {
            self.next = Some(self.delay_time);
            return None;
        }
        let (pos, have_pos) = v.pos;
        let no_size_handlers = self.size_handlers.is_empty();
        let therm: f64 = if !have_pos {
            -1.0
        } else if !self.have_size {
            let t = ((pos / 100_000.0) as i64 % 200) as f64;
            if t > 100.0 {
                200.0 - t
            } else {
                t
            }
        } else if self.size > 0.0 {
            ((100.0 * pos / self.size) as i64).clamp(0, 100) as f64
        } else {
            100.0
        };
        let mut s = String::from("\r");
        if !self.banner.is_empty() {
            s.push_str(&self.banner);
            s.push(' ');
        }
        if have_pos && self.have_size {
            s.push_str(&format!("{:3}% ", therm as i64));
        } else if self.have_size {
            s.push_str("  -% ");
        }
        let mut bar = v.width - (s.chars().count() as i64 + 25);
        if self.have_size && no_size_handlers {
            bar += 8;
        }
        let bar = bar.min(MAX_BAR);
        if bar > 0 {
            let b = bar as usize;
            let sp = |n: i64| " ".repeat(n.max(0) as usize);
            if therm < 0.0 || (!self.have_size && self.status >= Status::Done) {
                s.push_str(&format!("|{}|", "-".repeat(b)));
            } else if !self.have_size && bar > 3 {
                let c = ((bar - 3) as f64 * therm / 100.0) as i64;
                s.push_str(&format!("|{}***{}|", sp(c), sp(bar - c - 3)));
            } else if !self.have_size {
                let c = ((bar - 1) as f64 * therm / 100.0) as i64;
                s.push_str(&format!("|{}*{}|", sp(c), sp(bar - c - 1)));
            } else {
                let c = ((bar as f64 * therm / 100.0) as i64).clamp(0, bar);
                s.push_str(&format!("|{}{}|", "*".repeat(c as usize), sp(bar - c)));
            }
        }
        if self.have_size && no_size_handlers {
            s.push(' ');
        } else if have_pos {
            const PREFIXES: &[u8] = b" KMGTP";
            let mut which = 0;
            let mut abbrev = pos;
            while abbrev >= 100_000.0 && which + 1 < PREFIXES.len() {
                which += 1;
                abbrev /= 1024.0;
            }
            let p = PREFIXES[which] as char;
            let unit = if p == ' ' { ' ' } else { 'B' };
            s.push_str(&format!(" {:5}{p}{unit} ", abbrev.max(0.0) as u64));
        } else {
            s.push_str(" -----   ");
        }
        let mut wait = now - self.last_time;
        if pos > self.last_pos {
            self.last_time = now;
            self.last_pos = pos;
            if wait.div_euclid(1_000_000_000) >= STALL_SECS {
                self.stall_ns += wait;
            }
            wait = wait.rem_euclid(1_000_000_000);
        }
        let elapsed = (now - self.start_time - self.stall_ns) as f64 / 1e9;
        if self.status < Status::Done
            && (!have_pos || !self.have_size || elapsed <= 0.0 || pos > self.size)
        {
            s.push_str("   --:-- ETA");
        } else if wait.div_euclid(1_000_000_000) >= STALL_SECS {
            s.push_str(" - stalled -");
        } else {
            let (left, eta) = if self.status >= Status::Done || !have_pos || pos < 1e-6 {
                (elapsed as i64, false)
            } else {
                ((self.size / (pos / elapsed) - elapsed) as i64, true)
            };
            let hr = left / 3600;
            if hr != 0 {
                s.push_str(&format!("{hr:2}:"));
            } else {
                s.push_str("   ");
            }
            let sec = left % 3600;
            s.push_str(&format!(
                "{:02}:{:02}{}",
                sec / 60,
                sec % 60,
                if eta { " ETA" } else { "    " }
            ));
        }
        if self.status >= Status::Done {
            s.push('\n');
            self.active = false;
            self.next = None;
        } else {
            self.next = Some(now + self.interval_ns);
        }
        Some(s)
    }
}

impl Element for ProgressBar {
    fn has_timer(&self) -> bool {
        true
    }

    fn timer(&self) -> Option<i64> {
        self.next
    }

    fn run_timer(&mut self, _now: i64) {
        self.next = None;
        self.due = true;
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::write("mark_stopped"),
            HandlerInfo::write("mark_done"),
            HandlerInfo::rw("active"),
            HandlerInfo::rw("banner"),
            HandlerInfo::rw("poshandler"),
            HandlerInfo::rw("sizehandler"),
            HandlerInfo::read("pos"),
            HandlerInfo::rw("size"),
            HandlerInfo::write("reset"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "active" => Ok(self.active.to_string()),
            "banner" => Ok(self.banner.clone()),
            "poshandler" => Ok(self.pos_handlers.join(" ")),
            "sizehandler" => Ok(self.size_handlers.join(" ")),
            "pos" => Ok(self.last_pos.to_string()),
            "size" => Ok(self.size.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let v = value.trim();
        match name {
            "mark_stopped" | "mark_done" => {
                if self.status < Status::Done && self.active {
                    self.complete = Some(name == "mark_done");
                    self.next = Some(i64::MIN);
                }
            }
            "active" => {
                self.active = pronto_lang::args::parse_bool(v)
                    .map_err(|_| HandlerError::BadValue("type mismatch".into()))?;
                if self.active && self.next.is_none() && self.status != Status::Dead {
                    self.next = Some(i64::MIN);
                }
            }
            "banner" => self.banner = value.to_string(),
            "poshandler" => self.pos_handlers = handler_list(v),
            "sizehandler" => {
                self.size_handlers = handler_list(v);
                self.have_size = false;
            }
            "size" => {
                self.size = pronto_lang::args::parse_f64(v)
                    .map_err(|_| HandlerError::BadValue("expected a real number".into()))?;
            }
            "reset" => {
                self.have_size = false;
                if self.status != Status::Dead {
                    self.status = Status::First;
                    self.next = Some(i64::MIN);
                }
                self.active = true;
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

pub(crate) fn lookup(name: &str) -> Option<ClassEntry> {
    (name == "ProgressBar").then_some(ClassEntry {
        spec: &ProgressBar::SPEC,
        factory: ProgressBar::configure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(conf: &str) -> ProgressBar {
        let ctx = ConfigCtx {
            name: "pb",
            config: conf,
            ninputs: 0,
            noutputs: 0,
            base_dir: std::path::Path::new("."),
            keywords: ProgressBar::SPEC.keywords,
            output_push: &[],
            input_push: &[],
            peers: &pronto_elements::NoPeers,
        };
        let e = ProgressBar::configure(&ctx).expect("configures");
        let any: Box<dyn std::any::Any> = e;
        let mut pb = *any.downcast::<ProgressBar>().expect("a ProgressBar");
        // As if standard error were a terminal.
        pb.status = Status::First;
        pb
    }

    fn values(pos: Option<f64>, size: Option<f64>) -> Values {
        Values {
            size: (size.unwrap_or(0.0), size.is_some()),
            pos: (pos.unwrap_or(0.0), pos.is_some()),
            foreground: true,
            width: 80,
        }
    }

    const SEC: i64 = 1_000_000_000;

    /// With a fixed size, by hand (Click's layout): "\r", " 25% ", a bar
    /// of 80 - (6 + 25) + 8 = 57 columns with 57 * 25 / 100 = 14 stars,
    /// " ", then the time; at 2 s, half way, 2 s are left; mark_done
    /// draws the full bar with the time taken and a newline.
    #[test]
    fn fixed_size_bar_by_hand() {
        let mut pb = bar("x.pos, FIXED_SIZE 1000");
        let s = pb.draw(&values(Some(250.0), None), 0).expect("drawn");
        assert_eq!(
            s,
            format!("\r 25% |{}{}|    --:-- ETA", "*".repeat(14), " ".repeat(43))
        );
        assert_eq!(pb.timer(), Some(250_000_000));
        let s = pb.draw(&values(Some(500.0), None), 2 * SEC).expect("drawn");
        assert_eq!(
            s,
            format!("\r 50% |{}{}|    00:02 ETA", "*".repeat(28), " ".repeat(29))
        );
        assert_eq!(pb.read_handler("pos").expect("pos"), "500");
        pb.write_handler("mark_done", "").expect("mark_done");
        assert_eq!(pb.timer(), Some(i64::MIN));
        assert!(pb.needs_size());
        let s = pb.fire(&values(Some(600.0), None), 3 * SEC).expect("drawn");
        assert_eq!(s, format!("\r100% |{}|    00:03    \n", "*".repeat(57)));
        assert_eq!(pb.read_handler("size").expect("size"), "600");
        assert_eq!(pb.read_handler("active").expect("active"), "false");
        assert_eq!(pb.timer(), None);
        assert_eq!(pb.fire(&values(Some(700.0), None), 4 * SEC), None);
    }

    /// Without a known size: stars moving to and fro (12345678 / 100000
    /// = 123, 200 - 123 = 77 percent of 47 - 3 columns: 33 blanks), the
    /// position in KB (12345678 / 1024 = 12056); an unknown position gives
    /// dashes.
    #[test]
    fn unknown_size_and_position() {
        let mut pb = bar("x.pos, y.size, BANNER f.pcap");
        let s = pb
            .draw(&values(Some(12_345_678.0), None), 0)
            .expect("drawn");
        assert_eq!(
            s,
            format!(
                "\rf.pcap |{}***{}| 12056KB    --:-- ETA",
                " ".repeat(33),
                " ".repeat(11)
            )
        );
        let s = pb.draw(&values(None, None), SEC).expect("drawn");
        assert_eq!(
            s,
            format!("\rf.pcap |{}| -----      --:-- ETA", "-".repeat(47))
        );
        // Not in the foreground: nothing drawn, tried again later.
        let mut v = values(Some(1.0), None);
        v.foreground = false;
        assert_eq!(pb.draw(&v, 2 * SEC), None);
        assert_eq!(pb.timer(), Some(2 * SEC + 250_000_000));
    }

    #[test]
    fn delay_and_handlers() {
        let mut pb = bar("a.b c.d, e.f, DELAY 1.5, UPDATE 0.1");
        assert_eq!(pb.draw(&values(Some(1.0), Some(10.0)), 0), None);
        assert_eq!(pb.timer(), Some(1_500_000_000));
        assert!(pb.draw(&values(Some(1.0), Some(10.0)), 2 * SEC).is_some());
        assert_eq!(pb.timer(), Some(2 * SEC + 100_000_000));
        assert_eq!(pb.read_handler("poshandler").expect("r"), "a.b c.d");
        assert_eq!(pb.read_handler("sizehandler").expect("r"), "e.f");
        pb.write_handler("poshandler", "g.h").expect("w");
        assert_eq!(pb.read_handler("poshandler").expect("r"), "g.h");
        pb.write_handler("banner", "hello").expect("w");
        assert_eq!(pb.read_handler("banner").expect("r"), "hello");
        assert_eq!(
            pb.write_handler("active", "perhaps"),
            Err(HandlerError::BadValue("type mismatch".into()))
        );
        assert_eq!(
            sum_values(&[Some("1.5".into()), Some(" 2\n".into())]),
            (3.5, true)
        );
        assert_eq!(sum_values(&[Some("1".into()), None]), (1.0, false));
        assert_eq!(sum_values(&[]), (0.0, false));
    }
}
