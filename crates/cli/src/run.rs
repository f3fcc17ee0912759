//! `pronto run` and `pronto check`: Click's `click` command, option for
//! option.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use pronto_lang::{Diagnostic, Level, SourceMap};
use pronto_runtime::{CallError, Clock, Router, RouterOptions, Threads, MAX_THREADS};

/// Parsed `pronto run` options.
#[derive(Default, Debug)]
struct RunOpts {
    file: Option<String>,
    expr: Option<String>,
    handlers: Vec<String>,
    exit_handler: Option<String>,
    output: Option<String>,
    quit: bool,
    time: bool,
    no_warnings: bool,
    simtime: Option<f64>,
    defines: Vec<(String, String)>,
    /// `--busy-poll`: never sleep while idle.
    busy_poll: bool,
    /// `--poll-window TIME`: keep polling this long (ns) after work.
    poll_window_ns: i64,
    /// `--order per-packet`: no merge-point ordering.
    order_per_packet: bool,
    /// `--switch SOCKET`: interfaces are ports of this switch.
    switch: Option<String>,
    /// `--name NAME`: this middlebox's name on the switch.
    name: Option<String>,
    /// `--mac IF=MAC`: frames for MAC go to interface IF's port.
    macs: Vec<(String, [u8; 6])>,
    /// `--threads N` (0: not given, one thread).
    threads: usize,
    /// `--pool-limit N`: the most packet slots a router's pool grows to.
    pool_limit: Option<usize>,
    /// Print each diagnostic rustc-style (source line and caret) after
    /// Click's one-line form: always for `pronto check`, for `pronto run`
    /// when standard error is a terminal (Click's own tests compare the
    /// one-line forms alone).
    rich: bool,
    /// `pronto check --format json`: diagnostics are gathered here as JSON
    /// objects (level, line, column, message) instead of printed.
    collect: Option<std::cell::RefCell<Vec<serde_json::Value>>>,
    /// `pronto graph`: the flat configuration is kept here once parsed.
    keep_flat: Option<std::cell::RefCell<Option<pronto_lang::FlatConfig>>>,
}

/// The configured router: one, or one per thread (`--threads N`, N > 1).
enum Routers {
    One(Router),
    Many(Threads),
}

impl Routers {
    fn run(&mut self) -> Result<(), String> {
        match self {
            Routers::One(r) => r.run(),
            Routers::Many(t) => t.run(),
        }
    }

    fn read_handler(&mut self, full: &str, params: &str) -> Result<String, CallError> {
        match self {
            Routers::One(r) => r.read_handler(full, params),
            Routers::Many(t) => t.read_handler(full, params),
        }
    }
}

/// `pronto run`'s poll window unless `--poll-window` says otherwise: off.
/// Measured on a shared 2-vCPU guest (docs/benchmarks.md, OUVR), a window
/// left ping unchanged (its reply crosses pronto inside the request's own
/// `sendto`) and gained UDP request/response little against the noise, so
/// it is opt-in.
pub const DEFAULT_POLL_WINDOW_NS: i64 = 0;

/// The longest `--poll-window` (a second: longer is `--busy-poll`).
const MAX_POLL_WINDOW_NS: i64 = 1_000_000_000;

/// `--poll-window`'s value: a time with a unit (`ns`, `us`, `µs`, `ms`),
/// or a bare number of microseconds; 0 turns the window off.
pub(crate) fn parse_poll_window(v: &str) -> Result<i64, String> {
    let t = v.trim();
    let (num, scale) = [("ns", 1.0), ("us", 1e3), ("µs", 1e3), ("ms", 1e6)]
        .iter()
        .find_map(|(u, k)| t.strip_suffix(u).map(|n| (n, *k)))
        .unwrap_or((t, 1e3));
    match num.trim().parse::<f64>() {
        Ok(n) if n >= 0.0 && n * scale <= MAX_POLL_WINDOW_NS as f64 => Ok((n * scale) as i64),
        _ => Err(format!(
            "--poll-window: expected a time from 0 to 1000ms such as `50us` or `0` (off), \
             found `{v}`"
        )),
    }
}

fn parse_opts(args: &[String]) -> Result<RunOpts, String> {
    let mut o = RunOpts {
        poll_window_ns: DEFAULT_POLL_WINDOW_NS,
        ..RunOpts::default()
    };
    let mut i = 0;
    let mut positional_done = false;
    let value = |i: &mut usize, flag: &str, inline: Option<&str>| -> Result<String, String> {
        if let Some(v) = inline {
            return Ok(v.to_string());
        }
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| format!("option `{flag}` needs a value"))
    };
    while i < args.len() {
        let a = args[i].as_str();
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (a, None),
        };
        match flag {
            "-f" | "--file" => o.file = Some(value(&mut i, flag, inline)?),
            "-e" | "--expression" => o.expr = Some(value(&mut i, flag, inline)?),
            "-h" | "--handler" => o.handlers.push(value(&mut i, flag, inline)?),
            "-x" | "--exit-handler" => {
                if o.exit_handler.is_some() {
                    return Err("exit handler specified twice".into());
                }
                o.exit_handler = Some(value(&mut i, flag, inline)?)
            }
            "-o" | "--output" => o.output = Some(value(&mut i, flag, inline)?),
            "-q" | "--quit" => o.quit = true,
            "-t" | "--time" => o.time = true,
            "-w" | "--no-warnings" => o.no_warnings = true,
            "--warnings" => o.no_warnings = false,
            "--simtime" => {
                o.simtime = Some(match inline {
                    Some(v) => v
                        .parse()
                        .map_err(|_| format!("--simtime: expected seconds, found `{v}`"))?,
                    None => 1_000_000_000.0,
                })
            }
            "--switch" => o.switch = Some(value(&mut i, flag, inline)?),
            "--busy-poll" => o.busy_poll = true,
            "--order" => {
                let v = value(&mut i, flag, inline)?;
                o.order_per_packet = match v.as_str() {
                    "per-packet" => true,
                    "merge" => false,
                    _ => {
                        return Err(format!(
                            "--order: expected `per-packet` or `merge` (the default), found `{v}`"
                        ))
                    }
                }
            }
            "--poll-window" => o.poll_window_ns = parse_poll_window(&value(&mut i, flag, inline)?)?,
            "--pool-limit" => {
                let v = value(&mut i, flag, inline)?;
                o.pool_limit = match v.parse::<usize>() {
                    Ok(n) if (1..=u32::MAX as usize).contains(&n) => Some(n),
                    _ => {
                        return Err(format!(
                            "--pool-limit: expected a number of packets from 1 to {}, found `{v}`",
                            u32::MAX
                        ))
                    }
                }
            }
            "--threads" => {
                let v = value(&mut i, flag, inline)?;
                o.threads = match v.parse::<usize>() {
                    Ok(n) if (1..=MAX_THREADS).contains(&n) => n,
                    _ => {
                        return Err(format!(
                            "--threads: expected a number of threads from 1 to {MAX_THREADS}, found `{v}`"
                        ))
                    }
                };
            }
            "--name" => o.name = Some(value(&mut i, flag, inline)?),
            "--mac" => {
                let v = value(&mut i, flag, inline)?;
                let parsed = v.split_once('=').and_then(|(ifname, m)| {
                    Some((ifname.to_string(), pronto_switch::control::parse_mac(m)?))
                });
                match parsed {
                    Some(x) if !x.0.is_empty() => o.macs.push(x),
                    _ => {
                        return Err(format!(
                        "--mac: expected INTERFACE=MAC (e.g. eth0=02:00:00:00:00:01), found `{v}`"
                    ))
                    }
                }
            }
            "--help" => return Err(String::new()),
            "-" if o.file.is_none() && !positional_done => {
                o.file = Some("-".into());
                positional_done = true;
            }
            _ if a.starts_with('-') && a.len() > 1 => {
                // Click-style clustered or attached short options: -hFOO.
                let (f, v) = a.split_at(2);
                match f {
                    "-h" => o.handlers.push(v.to_string()),
                    "-x" => o.exit_handler = Some(v.to_string()),
                    "-f" => o.file = Some(v.to_string()),
                    "-e" => o.expr = Some(v.to_string()),
                    "-o" => o.output = Some(v.to_string()),
                    _ => return Err(format!("unknown option `{a}`")),
                }
            }
            _ => {
                if let Some((k, v)) = a.split_once('=') {
                    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        o.defines.push((k.to_string(), v.to_string()));
                        i += 1;
                        continue;
                    }
                }
                if o.file.is_none() && o.expr.is_none() && !positional_done {
                    o.file = Some(a.to_string());
                    positional_done = true;
                } else {
                    return Err(format!("unexpected argument `{a}`"));
                }
            }
        }
        i += 1;
    }
    Ok(o)
}

/// Reads the configuration text and a display name for it.
fn load(o: &RunOpts) -> Result<(String, String), String> {
    if let Some(e) = &o.expr {
        // Click names an expression configuration `config`.
        return Ok(("config".into(), e.clone()));
    }
    match o.file.as_deref() {
        None | Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| format!("<stdin>: {e}"))?;
            Ok(("<stdin>".into(), s))
        }
        Some(f) => std::fs::read_to_string(f)
            .map(|s| (f.to_string(), s))
            .map_err(|e| format!("{f}: {e}")),
    }
}

/// Prints `diags` (Click's one-line forms, then rustc-style when `rich`),
/// or gathers them as JSON for `pronto check --format json`.
fn report(o: &RunOpts, sm: &SourceMap, diags: &[Diagnostic], warnings: bool) {
    use std::io::Write;
    let rich = o.rich;
    if let Some(c) = &o.collect {
        for d in diags {
            if d.level == Level::Warning && !warnings {
                continue;
            }
            let (line, column) = match d.span {
                Some(s) => {
                    let (l, c) = sm.line_col(s);
                    (serde_json::json!(l), serde_json::json!(c))
                }
                None => (serde_json::Value::Null, serde_json::Value::Null),
            };
            let mut message = d.message.clone();
            if let Some((ctx, _)) = &d.context {
                message = format!("{ctx}: {message}");
            }
            c.borrow_mut().push(serde_json::json!({
                "level": match d.level {
                    Level::Error => "error",
                    Level::Warning => "warning",
                    Level::Note => "note",
                },
                "line": line,
                "column": column,
                "message": message,
                "notes": d.notes,
            }));
        }
        return;
    }
    let mut err = std::io::stderr().lock();
    for d in diags {
        if d.level == Level::Warning && !warnings {
            continue;
        }
        let _ = writeln!(err, "{}", d.render_click(sm));
    }
    let shown: Vec<&Diagnostic> = diags
        .iter()
        .filter(|d| warnings || d.level != Level::Warning)
        .collect();
    if rich && !shown.is_empty() {
        let _ = writeln!(err);
        for d in shown {
            let _ = writeln!(err, "{}", d.render(sm));
        }
    }
}

/// Parses, checks and configures; prints diagnostics. `None` on error.
fn build(o: &RunOpts) -> Result<(Routers, SourceMap), ExitCode> {
    let (name, text) = match load(o) {
        Ok(x) => x,
        Err(e) => {
            match &o.collect {
                Some(c) => c.borrow_mut().push(serde_json::json!({
                    "level": "error", "line": null, "column": null, "message": e, "notes": [],
                })),
                None => eprintln!("pronto: {e}"),
            }
            return Err(ExitCode::from(1));
        }
    };
    let mut sm = SourceMap::new();
    let file = sm.add(name, text);
    let opts = pronto_lang::Options {
        defines: &o.defines,
        is_primitive: &pronto_runtime::is_known_class,
    };
    let (flat, warnings) = match pronto_lang::parse_flat(&sm, file, &opts) {
        Ok(x) => x,
        Err(mut errs) => {
            pronto_runtime::explain_unknown_classes(&mut errs);
            report(o, &sm, &errs, !o.no_warnings);
            return Err(ExitCode::from(1));
        }
    };
    report(o, &sm, &warnings, !o.no_warnings);
    if let Some(k) = &o.keep_flat {
        *k.borrow_mut() = Some(flat.clone());
    }
    if let Some(out) = &o.output {
        if let Err(e) = std::fs::write(out, flat.to_click()) {
            eprintln!("pronto: {out}: {e}");
            return Err(ExitCode::from(1));
        }
    }
    if let Some(sock) = &o.switch {
        let instance = o.name.clone().unwrap_or_else(|| {
            o.file
                .as_deref()
                .and_then(|f| std::path::Path::new(f).file_stem())
                .map(|s| s.to_string_lossy().into_owned())
                .filter(|s| s != "-")
                .unwrap_or_else(|| format!("pronto-{}", std::process::id()))
        });
        if let Err(e) = pronto_switch::control::check_name(&instance) {
            eprintln!("pronto: --name: {e}");
            return Err(ExitCode::from(1));
        }
        pronto_elements::userlevel::swport::set_switch(Some(
            pronto_elements::userlevel::swport::SwitchAttach {
                socket: PathBuf::from(sock),
                instance,
                macs: o.macs.clone(),
            },
        ));
    } else if !o.macs.is_empty() || o.name.is_some() {
        eprintln!("pronto: --name and --mac apply to switch ports: give --switch SOCKET too");
        return Err(ExitCode::from(1));
    }
    let ropts = RouterOptions {
        base_dir: PathBuf::from("."),
        clock: match o.simtime {
            Some(s) => Clock::Simulated((s * 1e9) as i64),
            None => Clock::Real,
        },
        busy_poll: o.busy_poll,
        poll_window_ns: o.poll_window_ns,
        order_per_packet: o.order_per_packet,
        pool_limit: o.pool_limit.unwrap_or(pronto_runtime::DEFAULT_POOL_LIMIT),
        ..RouterOptions::default()
    };
    if o.threads > 1 {
        let mut warnings = Vec::new();
        let built = Threads::build(&flat, &sm, &ropts, o.threads, &mut warnings);
        report(o, &sm, &warnings, !o.no_warnings);
        return match built {
            Ok(t) => Ok((Routers::Many(t), sm)),
            Err(errs) => {
                report(o, &sm, &errs, true);
                if o.collect.is_none() && errs.iter().any(|d| d.context.is_some()) {
                    eprintln!("Router could not be initialized!");
                }
                Err(ExitCode::from(1))
            }
        };
    }
    match Router::build(&flat, &sm, &ropts) {
        Ok(r) => Ok((Routers::One(r), sm)),
        Err(errs) => {
            report(o, &sm, &errs, true);
            // Click's last word when an element refuses its configuration.
            if o.collect.is_none() && errs.iter().any(|d| d.context.is_some()) {
                eprintln!("Router could not be initialized!");
            }
            Err(ExitCode::from(1))
        }
    }
}

/// `pronto run`.
pub fn run(args: &[String]) -> ExitCode {
    let o = match parse_opts(args) {
        Ok(mut o) => {
            use std::io::IsTerminal;
            o.rich = std::io::stderr().is_terminal();
            o
        }
        Err(e) if e.is_empty() => {
            return crate::out::print(&crate::cli::long_help("run"));
        }
        Err(e) => {
            eprintln!("pronto run: {e} (see `pronto run --help`)");
            return ExitCode::from(1);
        }
    };
    let (mut router, _sm) = match build(&o) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let mut status: i32 = 0;
    if !o.quit {
        let usage0 = rusage();
        let t0 = std::time::Instant::now();
        if let Err(e) = router.run() {
            eprintln!("pronto: {e}");
            status = 1;
        }
        if o.time {
            let usage1 = rusage();
            let wall = t0.elapsed();
            let cs = wall.as_millis() / 10;
            crate::outln!(
                "{:.3}u {:.3}s {}:{:02}.{:02}",
                usage1.0 - usage0.0,
                usage1.1 - usage0.1,
                cs / 6000,
                (cs / 100) % 60,
                cs % 100
            );
        }
    }
    let print_names = o.handlers.len() > 1;
    for h in &o.handlers {
        match router.read_handler(h, "") {
            Ok(mut v) => {
                if print_names {
                    crate::outln!("{h}:");
                }
                if !v.is_empty() && !v.ends_with('\n') {
                    v.push('\n');
                }
                crate::out!("{v}");
                if print_names {
                    crate::outln!();
                }
            }
            Err(e) => {
                eprintln!("pronto: {e}");
                status = 1;
            }
        }
    }
    if let Some(h) = &o.exit_handler {
        match router.read_handler(h, "") {
            Ok(v) => {
                let v = v.trim();
                if let Ok(n) = v.parse::<i32>() {
                    status = n;
                } else if let Ok(b) = pronto_lang::args::parse_bool(v) {
                    status = if b { 0 } else { 1 };
                } else {
                    eprintln!("pronto: exit handler value should be integer");
                    status = 255;
                }
            }
            Err(e) => {
                eprintln!("pronto: {e}");
                status = 255;
            }
        }
    }
    ExitCode::from((status & 0xff) as u8)
}

/// `pronto check`: parse, resolve and validate only, each file in turn.
pub fn check(a: &crate::cli::CheckArgs) -> ExitCode {
    use crate::cli::Format;
    let mut defines = Vec::new();
    let mut files: Vec<String> = a.file.clone();
    for w in &a.files {
        match define(w) {
            Some(d) => defines.push(d),
            None => files.push(w.clone()),
        }
    }
    // (file, expression): each configuration to check.
    let mut inputs: Vec<(Option<String>, Option<String>)> = Vec::new();
    if let Some(e) = &a.expr {
        inputs.push((None, Some(e.clone())));
    }
    inputs.extend(files.into_iter().map(|f| (Some(f), None)));
    if inputs.is_empty() {
        inputs.push((Some("-".into()), None));
    }
    if a.output.is_some() && inputs.len() > 1 {
        eprintln!("pronto check: --output writes one flattened configuration: give one file");
        return ExitCode::from(2);
    }
    // A pure check: no device opened, no file read or created.
    pronto_elements::world::set_check_only(true);
    let json = a.format == Format::Json;
    let mut failed = false;
    for (file, expr) in inputs {
        let o = RunOpts {
            file,
            expr,
            defines: defines.clone(),
            output: a.output.clone(),
            no_warnings: a.no_warnings,
            rich: true,
            collect: json.then(|| std::cell::RefCell::new(Vec::new())),
            ..RunOpts::default()
        };
        let name = display_name(&o);
        let ok = build(&o).is_ok();
        failed |= !ok;
        match &o.collect {
            Some(c) => {
                let (errors, warnings): (Vec<_>, Vec<_>) =
                    c.take().into_iter().partition(|d| d["level"] == "error");
                let v = serde_json::json!({
                    "file": name,
                    "ok": ok,
                    "errors": errors,
                    "warnings": warnings,
                });
                crate::outln!("{v}");
            }
            None if ok => eprintln!("{name}: ok"),
            None => {}
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The flat configuration of `file` or `expr`, checked as `pronto check`
/// checks it (its diagnostics printed the same way); `Err` after an error.
/// `words` are the command line's FILE words: `NAME=VALUE` ones set
/// `define`d parameters, the one left names the file.
pub fn checked_flat(
    words: &[String],
    expr: Option<String>,
    no_warnings: bool,
) -> Result<(pronto_lang::FlatConfig, String), ExitCode> {
    let mut defines = Vec::new();
    let mut files = Vec::new();
    for w in words {
        match define(w) {
            Some(d) => defines.push(d),
            None => files.push(w.clone()),
        }
    }
    if files.len() > 1 || (expr.is_some() && !files.is_empty()) {
        eprintln!("pronto: give one configuration: one FILE or -e EXPR");
        return Err(ExitCode::from(2));
    }
    let file = match (&expr, files.pop()) {
        (Some(_), _) => None,
        (None, f) => Some(f.unwrap_or_else(|| "-".into())),
    };
    pronto_elements::world::set_check_only(true);
    let o = RunOpts {
        file,
        expr,
        defines,
        no_warnings,
        rich: true,
        keep_flat: Some(std::cell::RefCell::new(None)),
        ..RunOpts::default()
    };
    let name = display_name(&o);
    build(&o)?;
    let flat = o
        .keep_flat
        .and_then(|k| k.into_inner())
        .ok_or(ExitCode::from(1))?;
    Ok((flat, name))
}

/// `NAME=VALUE`: a `define`d parameter's value.
fn define(w: &str) -> Option<(String, String)> {
    let (k, v) = w.split_once('=')?;
    (!k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| (k.to_string(), v.to_string()))
}

/// The name a configuration is reported under.
fn display_name(o: &RunOpts) -> String {
    match (&o.expr, o.file.as_deref()) {
        (Some(_), _) => "config",
        (None, None | Some("-")) => "<stdin>",
        (None, Some(f)) => f,
    }
    .to_string()
}

/// (user, system) CPU seconds so far, from /proc/self/stat (clock ticks
/// of 1/100 s); zeros where that file is unreadable.
fn rusage() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields of the whole line.
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (tick(11), tick(12))
}
