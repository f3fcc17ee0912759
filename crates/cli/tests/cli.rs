//! The `pronto` command line, run as a program: `elements`, `check` and
//! `run` with Click's options.

use std::io::Write;
use std::process::{Command, Output, Stdio};

mod common;

use common::{run_example, scratch, tcpdump};

fn pronto() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pronto"))
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("pronto runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn elements_lists_classes() {
    let o = run(pronto().arg("elements"));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let names: Vec<&str> = out.lines().collect();
    for want in ["IPFilter", "Counter", "Queue", "Script", "ToDump"] {
        assert!(names.contains(&want), "{want} not listed:\n{out}");
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "the list is sorted");
}

#[test]
fn elements_into_a_closed_pipe_ends_quietly() {
    // `pronto elements | head -1`: the reader has gone before pronto
    // writes (its end of the pipe is closed before pronto starts).
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let o = pronto()
        .arg("elements")
        .stdout(writer)
        .output()
        .expect("run pronto");
    assert!(o.status.success(), "{:?}: {}", o.status, stderr(&o));
    assert_eq!(stderr(&o), "", "no panic, no message");
}

#[test]
fn elements_documents_one_class() {
    let o = run(pronto().args(["elements", "Counter"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let doc = pronto_elements::registry::lookup("Counter")
        .expect("Counter is registered")
        .spec
        .doc;
    assert!(
        out.starts_with("Counter\n  ports: 1/1   processing: a/a\n"),
        "{out}"
    );
    assert!(out.contains(doc), "{out}");
    assert!(out.contains("Counter([KEYWORDS])"), "{out}");

    // Click's alias documents the class it names.
    let o = run(pronto().args(["elements", "SetVlanAnno"]));
    assert!(stdout(&o).starts_with("SetVLANAnno\n"), "{}", stdout(&o));

    let o = run(pronto().args(["elements", "NoSuchClass"]));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no element class `NoSuchClass`"));
}

#[test]
fn check_reports_every_configuration_error() {
    let dir = scratch("check2");
    std::fs::write(
        dir.join("two.click"),
        "a :: InfiniteSource(LIMIT 3)\n  -> c :: Counter(FOO bar)\n  -> q :: Queue(-5)\n  -> Discard;\n",
    )
    .expect("write");
    let o = run(pronto().current_dir(&dir).args(["check", "two.click"]));
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let err = stderr(&o);
    // Click's one-line form first, for each error, in source order...
    assert!(
        err.starts_with(
            "two.click:2: While configuring 'c :: Counter':\n  too many arguments: `FOO bar` was not expected\n\
             two.click:3: While configuring 'q :: Queue':\n  CAPACITY: integer out of range (0 to 4294967295), found `-5`\n\n"
        ),
        "{err}"
    );
    // ...then a block per error with the source line and a caret.
    assert!(
        err.contains(
            "error: too many arguments: `FOO bar` was not expected\n \
             --> two.click:2:19\n  |\n2 |   -> c :: Counter(FOO bar)\n  |                   ^^^^^^^\n"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "error: CAPACITY: integer out of range (0 to 4294967295), found `-5`\n \
             --> two.click:3:17\n  |\n3 |   -> q :: Queue(-5)\n  |                 ^^\n"
        ),
        "{err}"
    );
}

#[test]
fn check_bounds_expansion_bombs_and_error_floods() {
    let dir = scratch("check-bombs");
    // Each variable two quoted copies of the one before (escaped again at
    // each step): without a limit, gigabytes.
    let mut defs = vec!["$A0 x".to_string()];
    defs.extend((1..=15).map(|i| format!("$A{i} \"$A{p}$A{p}\"", p = i - 1)));
    let bomb = format!("define({});\nIdle -> Discard;\n", defs.join(", "));
    std::fs::write(dir.join("bomb.click"), &bomb).expect("write");
    let o = run(pronto().current_dir(&dir).args(["check", "bomb.click"]));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.len() < 4096, "{} bytes of errors", err.len());
    assert!(err.starts_with("bomb.click:1: expansion of `$A"), "{err}");
    assert!(
        err.contains("too large: substituting variables may add at most 1048576 bytes (1 MiB)"),
        "{err}"
    );
    assert!(err.contains(" --> bomb.click:1:"), "{err}");

    // One line, 8,000 elements with a bad argument: the first 100 errors,
    // each under a window of the line, then how many more there were.
    let line: Vec<String> = (0..8000)
        .map(|i| format!("Idle -> q{i} :: Queue(99999999999999999999{i:03}) -> Discard"))
        .collect();
    let text = line.join("; ") + "\n";
    std::fs::write(dir.join("many.click"), &text).expect("write");
    let o = run(pronto().current_dir(&dir).args(["check", "many.click"]));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.len() < 100_000, "{} bytes of errors", err.len());
    assert!(
        err.starts_with(
            "many.click:1: While configuring 'q0 :: Queue':\n  CAPACITY: integer out of range (0 to 4294967295), found `99999999999999999999000`\n"
        ),
        "{}",
        &err[..err.len().min(2000)]
    );
    assert_eq!(err.matches("many.click:1: While configuring").count(), 100);
    assert_eq!(err.matches("= note: while configuring `q").count(), 100);
    assert!(
        err.contains("\nnote: ... and 7900 more errors\n"),
        "{}",
        &err[err.len().saturating_sub(2000)..]
    );
    // The first span starts 20 characters into the line: the window runs
    // from the line's start to 80 characters past the span's start.
    let window = format!("\n1 | {}...\n", &text[..100]);
    assert!(err.contains(&window), "{}", &err[..err.len().min(3000)]);
}

#[test]
fn check_reports_unknown_class_then_bad_argument() {
    // An unknown class stops the check at the parse stage (as Click
    // stops before configuring); once it is fixed, the bad argument shows.
    let dir = scratch("check-unknown");
    let text =
        "src :: InfiniteSource(LIMIT 3)\n  -> Bogus\n  -> c :: Counter(FOO bar)\n  -> Discard;\n";
    std::fs::write(dir.join("bad.click"), text).expect("write");
    let o = run(pronto().current_dir(&dir).args(["check", "bad.click"]));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.starts_with("bad.click:2: unknown element class 'Bogus'\n"),
        "{err}"
    );
    assert!(
        err.contains(
            "error: unknown element class 'Bogus'\n --> bad.click:2:6\n  |\n2 |   -> Bogus\n  |      ^^^^^"
        ),
        "{err}"
    );

    std::fs::write(dir.join("bad.click"), text.replace("Bogus", "Null")).expect("write");
    let o = run(pronto().current_dir(&dir).args(["check", "bad.click"]));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.starts_with(
            "bad.click:3: While configuring 'c :: Counter':\n  too many arguments: `FOO bar` was not expected\n"
        ),
        "{err}"
    );
    assert!(err.contains("\n  |                   ^^^^^^^\n"), "{err}");
}

#[test]
fn check_accepts_a_good_file() {
    let dir = scratch("check-ok");
    std::fs::write(
        dir.join("ok.click"),
        "InfiniteSource -> Counter -> Discard;\n",
    )
    .expect("write");
    let o = run(pronto().current_dir(&dir).args(["check", "ok.click"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "ok.click: ok\n");
    let o = run(pronto().args(["check", "-e", "Idle"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "config: ok\n");
}

#[test]
fn run_quit_sets_up_without_running() {
    let o = run(pronto().args(["run", "-q", "-e", "InfiniteSource -> Discard"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
}

#[test]
fn run_prints_read_handlers() {
    let conf = "InfiniteSource(LIMIT 5, STOP true) -> c :: Counter -> Discard";
    let o = run(pronto().args(["run", "-e", conf, "-h", "c.count"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "5\n");
    // With several handlers each value is named.
    let o = run(pronto().args(["run", "-e", conf, "-h", "c.count", "-h", "c.byte_count"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "c.count:\n5\n\nc.byte_count:\n345\n\n");
}

#[test]
fn run_exit_status_from_handler() {
    let conf = "InfiniteSource(LIMIT 3, STOP true) -> c :: Counter -> Discard";
    let o = run(pronto().args(["run", "-e", conf, "-x", "c.count"]));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = run(pronto().args(["run", "-q", "-e", "Idle", "-x", "nope.count"]));
    assert_eq!(o.status.code(), Some(255));
    assert!(
        stderr(&o).contains("no element named `nope`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_defines_from_the_command_line() {
    let conf = "define($N 2); InfiniteSource(LIMIT $N, STOP true) -> c :: Counter -> Discard";
    let o = run(pronto().args(["run", "-e", conf, "-h", "c.count"]));
    assert_eq!(stdout(&o), "2\n", "{}", stderr(&o));
    let o = run(pronto().args(["run", "-e", conf, "-h", "c.count", "N=7"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "7\n");
}

#[test]
fn run_reads_the_configuration_from_stdin() {
    for extra in [&[][..], &["-"][..]] {
        let mut child = pronto()
            .arg("run")
            .args(extra)
            .args(["-h", "c.count"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(b"InfiniteSource(LIMIT 4, STOP true) -> c :: Counter -> Discard;\n")
            .expect("write stdin");
        let o = child.wait_with_output().expect("wait");
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), "4\n");
    }
}

#[test]
fn run_writes_the_flattened_configuration() {
    let dir = scratch("flat");
    std::fs::write(
        dir.join("comp.click"),
        "elementclass Foo { input -> Counter -> output }\n\
         InfiniteSource(LIMIT 2, STOP true) -> f :: Foo -> Discard;\n",
    )
    .expect("write");
    let o = run(pronto()
        .current_dir(&dir)
        .args(["run", "-q", "-o", "flat.click", "comp.click"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let flat = std::fs::read_to_string(dir.join("flat.click")).expect("flat file written");
    assert!(!flat.contains("elementclass"), "{flat}");
    assert!(flat.contains("f/Counter@1 :: Counter;"), "{flat}");
    let o = run(pronto().current_dir(&dir).args(["check", "flat.click"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "flat.click: ok\n");
    // The flat file runs the same router.
    let o = run(pronto()
        .current_dir(&dir)
        .args(["run", "flat.click", "-h", "f/Counter@1.count"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "2\n");
}

#[test]
fn simtime_makes_time_deterministic() {
    let conf = "Script(print $(now), wait 1.5s, print $(now), stop)";
    let o = run(pronto().args(["run", "--simtime", "-e", conf]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "1000000000.000000\n1000000001.500000\n");
    let o = run(pronto().args(["run", "--simtime=100", "-e", conf]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "100.000000\n101.500000\n");
    let o = run(pronto().args(["run", "--simtime=x", "-e", conf]));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--simtime: expected seconds, found `x`"));
}

#[test]
fn poll_window_is_an_option_of_run_read_back_by_the_idle_handler() {
    let conf = "Idle -> Discard";
    for (arg, ns) in [
        (None, "0"),
        (Some("--poll-window=0"), "0"),
        (Some("--poll-window=200us"), "200000"),
        (Some("--poll-window=1.5ms"), "1500000"),
        (Some("--poll-window=75"), "75000"),
    ] {
        let mut cmd = pronto();
        cmd.arg("run");
        cmd.args(arg);
        let o = run(cmd.args(["-q", "-h", "idle", "-e", conf]));
        assert!(o.status.success(), "{arg:?}: {}", stderr(&o));
        assert_eq!(
            stdout(&o),
            format!("poll_window_ns {ns}\npolls 0\nsleeps 0\n"),
            "{arg:?}"
        );
    }
    for bad in [
        "--poll-window=-1us",
        "--poll-window=2s",
        "--poll-window=fast",
    ] {
        let o = run(pronto().args(["run", bad, "-q", "-e", conf]));
        assert_eq!(o.status.code(), Some(1), "{bad}");
        let v = bad.split_once('=').expect("=").1;
        assert!(
            stderr(&o).contains(&format!(
                "--poll-window: expected a time from 0 to 1000ms such as `50us` or `0` (off), \
                 found `{v}`"
            )),
            "{bad}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn order_is_an_option_of_run_read_back_by_the_order_handler() {
    let conf = "InfiniteSource(LIMIT 8, STOP true) -> c :: Classifier(0/00, -); \
                c[0] -> d :: Discard; c[1] -> d;";
    for (arg, how) in [
        (None, "c: batches, ordered at d\n"),
        (Some("--order=merge"), "c: batches, ordered at d\n"),
        (Some("--order=per-packet"), "c: one packet at a time\n"),
    ] {
        let mut cmd = pronto();
        cmd.arg("run");
        cmd.args(arg);
        let o = run(cmd.args(["-q", "-h", "order", "-e", conf]));
        assert!(o.status.success(), "{arg:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), how, "{arg:?}");
    }
    let o = run(pronto().args(["run", "--order", "sideways", "-q", "-e", conf]));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o)
            .contains("--order: expected `per-packet` or `merge` (the default), found `sideways`"),
        "{}",
        stderr(&o)
    );
}

/// The README's first command: the bundled firewall runs end to end, prints
/// its report, and writes a pcap that tcpdump reads back.
#[test]
fn firewall_example_runs_and_tcpdump_reads_its_output() {
    let dir = scratch("firewall");
    let out_pcap = dir.join("allowed.pcap");
    let report = run_example("firewall", &[], &[("OUT", &out_pcap)]).stdout;
    assert!(report.contains("read         158 packets"), "{report}");
    assert!(
        report.contains("allowed      118 packets, 5296 bytes"),
        "{report}"
    );
    assert!(report.contains("denied       32"), "{report}");
    if let Some(text) = tcpdump(&out_pcap) {
        let lines = text.lines().count();
        assert_eq!(lines, 118, "tcpdump read {lines} packets");
    }
}

#[test]
fn printers_print_packet_by_packet_as_click() {
    // A batch of three through two printers, and through a split to two
    // printers: every line for one packet before the next packet's.
    let o = run(pronto().args([
        "run",
        "-e",
        "InfiniteSource(\\<01>, LIMIT 3, BURST 3, STOP true) -> Print(a) -> Print(b) -> Discard;",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<String> = stderr(&o).lines().map(|l| l[..2].to_string()).collect();
    assert_eq!(lines, ["a:", "b:", "a:", "b:", "a:", "b:"]);
    let o = run(pronto().args([
        "run",
        "-e",
        "InfiniteSource(\\<01>, LIMIT 2, BURST 2, STOP true) -> t :: Tee; t[0] -> Print(x) -> Discard; t[1] -> Print(y) -> Discard;",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<String> = stderr(&o).lines().map(|l| l[..2].to_string()).collect();
    assert_eq!(lines, ["x:", "y:", "x:", "y:"]);
}

#[test]
fn check_touches_nothing_and_says_what_run_will_need() {
    // No trace read, no dump created, no interface opened: what is missing
    // now is a warning naming what `pronto run` will need.
    let dir = scratch("check-pure");
    let cfg = "FromDump(nofile.pcap) -> ToDump(out.pcap);\n\
               FromIPSummaryDump(nofile.txt) -> ToIPSummaryDump(out.txt, CONTENTS src);\n\
               FromDevice(pronto-nonexistent0, METHOD PCAP) -> Discard;\n\
               Idle -> ToDump(nodir/x.pcap);\n";
    std::fs::write(dir.join("pure.click"), cfg).expect("write");
    let o = run(pronto().current_dir(&dir).args(["check", "pure.click"]));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    for want in [
        "pure.click:1: While configuring 'FromDump@1 :: FromDump':\n  warning: nofile.pcap: no such file; `pronto run` will need it\n",
        "warning: nofile.txt: no such file; `pronto run` will need it\n",
        "warning: pronto-nonexistent0: no such network interface here; `pronto run` will need it",
        "warning: nodir/x.pcap: no directory ",
        "pure.click: ok\n",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .expect("scratch")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["pure.click"], "check created files");
    // A bad argument is still an error.
    std::fs::write(
        dir.join("bad.click"),
        "FromDump(x.pcap, BURST 0x) -> Discard;",
    )
    .expect("write");
    let o = run(pronto().current_dir(&dir).args(["check", "bad.click"]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // A Click class pronto lacks: Click's line, then why.
    let o = run(pronto()
        .current_dir(&dir)
        .args(["check", "-e", "PollDevice(eth0) -> Discard;"]));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("config:1: unknown element class 'PollDevice'\n"),
        "{err}"
    );
    assert!(
        err.contains(
            "= note: PollDevice: a Click kernel-module element; at user level FromDevice polls"
        ),
        "{err}"
    );
}

#[test]
fn help_and_global_options_work_where_a_user_puts_them() {
    // Each command's --help is its own: what it does, its options, an
    // example; `pronto run` keeps Click's `-h` (a handler), not help.
    for (cmd, first, option) in [
        (
            "run",
            "Run a Click configuration",
            "-h, --handler ELEMENT.H",
        ),
        ("check", "Parse, resolve and validate", "--format <FORMAT>"),
        ("elements", "List the element classes", "[CLASS]"),
        ("completions", "Print a shell completion script", "fish"),
    ] {
        let o = run(pronto().args([cmd, "--help"]));
        assert_eq!(o.status.code(), Some(0), "{cmd}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.starts_with(first), "{cmd}: {out}");
        assert!(out.contains(option), "{cmd}: {out}");
        assert!(out.contains("Example"), "{cmd}: {out}");
    }
    let o = run(pronto().args(["switch", "--help"]));
    assert!(
        stdout(&o).starts_with("Run the shared-memory switch that middleboxes attach"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("--no-learning") && stdout(&o).contains("Example"));
    // A mistyped command: clap's suggestion.
    let o = run(pronto().args(["chek", "x.click"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("tip: a similar subcommand exists: 'check'"),
        "{}",
        stderr(&o)
    );
    // The version, in each spelling.
    for v in ["--version", "-v", "-V", "version"] {
        let o = run(pronto().arg(v));
        assert_eq!(
            stdout(&o),
            format!("pronto {}\n", env!("CARGO_PKG_VERSION")),
            "{v}"
        );
    }
    // A bench experiment's --help prints the options and starts nothing
    // (it used to run a campaign with the defaults).
    for sub in ["chaos", "soak", "switch", "nfp"] {
        let o = run(pronto().args(["bench", sub, "--help"]));
        assert_eq!(o.status.code(), Some(0), "bench {sub}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.starts_with("pronto bench: experiments"), "{sub}: {out}");
        assert!(out.contains("--strict"), "{sub}: {out}");
        assert!(
            out.contains("--duration SECONDS") && out.contains("--runs N"),
            "{sub}: {out}"
        );
    }
    // `pronto --json ls` is `pronto ls --json`: the global options reach
    // the command before or after it, or after its arguments.
    for args in [
        &["--json", "--socket", "/nonexistent/prontod.sock", "ls"][..],
        &["ls", "--json", "--socket", "/nonexistent/prontod.sock"],
        &[
            "--socket",
            "/nonexistent/prontod.sock",
            "show",
            "fw",
            "--json",
        ],
        &[
            "show",
            "fw",
            "--json",
            "--socket",
            "/nonexistent/prontod.sock",
        ],
    ] {
        let o = run(pronto().args(args));
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let cmd = if args.contains(&"ls") { "ls" } else { "show" };
        assert!(
            stderr(&o).starts_with(&format!(
                "pronto {cmd}: cannot reach the daemon at /nonexistent/prontod.sock"
            )),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// `pronto check` with many files and `--format json`: one object per
/// file, errors with line and column, a failing status if any fails.
#[test]
fn check_many_files_as_json() {
    let dir = scratch("check-json");
    std::fs::write(dir.join("ok.click"), "Idle -> Discard;\n").expect("write");
    std::fs::write(dir.join("bad.click"), "Idle\n  -> Nope;\n").expect("write");
    let o = run(pronto().current_dir(&dir).args([
        "check",
        "ok.click",
        "bad.click",
        "gone.click",
        "--format",
        "json",
    ]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{}", stdout(&o));
    assert_eq!(
        lines[0],
        r#"{"errors":[],"file":"ok.click","ok":true,"warnings":[]}"#
    );
    assert_eq!(
        lines[1],
        r#"{"errors":[{"column":6,"level":"error","line":2,"message":"unknown element class 'Nope'","notes":[]}],"file":"bad.click","ok":false,"warnings":[]}"#
    );
    assert!(lines[2].starts_with(r#"{"errors":[{"column":null,"level":"error","line":null,"message":"gone.click: No such file"#), "{}", lines[2]);
    assert!(
        lines[2].ends_with(r#""file":"gone.click","ok":false,"warnings":[]}"#),
        "{}",
        lines[2]
    );
    // Text: each good file says so; the status is 0 only if all pass.
    let o = run(pronto()
        .current_dir(&dir)
        .args(["check", "ok.click", "ok.click"]));
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stderr(&o), "ok.click: ok\nok.click: ok\n");
    let o = run(pronto()
        .current_dir(&dir)
        .args(["check", "bad.click", "ok.click"]));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("bad.click:2: unknown element class 'Nope'\n"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).ends_with("ok.click: ok\n"), "{}", stderr(&o));
}

/// Output into a pipe whose reader has gone ends quietly: no panic, no
/// message, success (as `pronto elements | head` does).
#[test]
fn every_listing_into_a_closed_pipe_ends_quietly() {
    let dir = scratch("closed-pipe");
    std::fs::write(dir.join("ok.click"), "Idle -> Discard;\n").expect("write");
    for args in [
        &["check", "--format", "json", "ok.click", "ok.click"][..],
        &["man"],
        &["completions", "fish"],
        &["elements", "Counter"],
        &[
            "run",
            "-e",
            "InfiniteSource(LIMIT 3, STOP true) -> c :: Counter -> Discard",
            "-h",
            "c.count",
        ],
        &["chain", "help"],
    ] {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let o = pronto()
            .current_dir(&dir)
            .args(args)
            .stdout(writer)
            .output()
            .expect("run pronto");
        assert!(
            o.status.success(),
            "{args:?}: {:?}: {}",
            o.status,
            stderr(&o)
        );
        assert_eq!(stderr(&o), "", "{args:?}");
    }
}

/// A merge that waits for a source switched on later: the sources' and the
/// queue's notifiers keep `TimeSortedSched(STOP true)` going until every
/// input is done, and wake its puller when the late source starts.
#[test]
fn time_sorted_merge_follows_its_inputs_notifiers() {
    let dir = scratch("tss-notifiers");
    let dump = |name: &str, rows: &[(&str, &str)]| {
        let mut t = String::from("!data timestamp ip_src\n");
        for (ts, a) in rows {
            t.push_str(&format!("{ts} {a}\n"));
        }
        std::fs::write(dir.join(name), t).expect("write a dump");
    };
    dump(
        "a",
        &[("0.0", "1.0.0.0"), ("0.1", "1.0.0.1"), ("0.2", "1.0.0.2")],
    );
    dump("b", &[("0.05", "1.0.1.0"), ("0.15", "1.0.1.1")]);
    dump(
        "c",
        &[("0.3", "1.0.2.0"), ("0.4", "1.0.2.1"), ("0.5", "1.0.2.2")],
    );
    let conf = "a :: FromIPSummaryDump(a); b :: FromIPSummaryDump(b);
        c :: FromIPSummaryDump(c, ACTIVE false);
        t :: TimeSortedSched(STOP true);
        a -> [0]t; b -> [1]t; c -> Queue -> [2]t;
        t -> ToIPSummaryDump(-, FIELDS ip_src);
        DriverManager(wait, write c.active true, wait)";
    let o = run(pronto().current_dir(&dir).args(["run", "-e", conf]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let got: Vec<String> = stdout(&o)
        .lines()
        .filter(|l| !l.starts_with('!'))
        .map(String::from)
        .collect();
    assert_eq!(
        got,
        ["1.0.0.0", "1.0.1.0", "1.0.0.1", "1.0.1.1", "1.0.0.2", "1.0.2.0", "1.0.2.1", "1.0.2.2"]
    );
}

/// `TimeFilter(END_CALL ...)` calls a script's handler at the first packet
/// past the end and decides that packet after the call: the script extends
/// the interval twice, then lets the end stand.
#[test]
fn time_filter_end_call_is_made_before_its_packet_is_decided() {
    let dir = scratch("timefilter-endcall");
    std::fs::write(dir.join("f"), "!data timestamp\n0.1\n0.2\n1.0\n1.2\n5.5\n").expect("dump");
    let conf = "FromIPSummaryDump(f, STOP true)
            -> t :: TimeFilter(0, 1, END_CALL s.run $t) -> c :: Counter -> Discard;
        DriverManager(pause, print c.count, print t.end, stop);
        s :: Script(TYPE PASSIVE, init x 0, goto exit $(gt $x 1), set x $(add $x 1),
                    print $1, write t.extend_interval 1)";
    let o = run(pronto().current_dir(&dir).args(["run", "-e", conf]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "1.000000\n5.500000\n4\n3.000000\n");
}

#[test]
fn address_arguments_may_name_a_network_interface() {
    // As in Click at user level: `lo` is 127.0.0.1/8 with an all-zero
    // Ethernet address on every Linux machine.
    let conf = "InfiniteSource(DATA \\<00000000>, LIMIT 1, STOP true) \
                -> IPEncap(17, lo, lo:bcast) -> IPPrint(x, TIMESTAMP false) \
                -> EtherEncap(0x0800, lo, 1:2:3:4:5:6) -> Print(e, 14) -> Discard;";
    let o = run(pronto().args(["run", "-e", conf]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "x: 127.0.0.1.0 > 127.255.255.255.0: truncated-udp\n\
         e:   38 | 01020304 05060000 00000000 0800\n"
    );
    // As a prefix the name is the interface's network; a name that is no
    // interface is refused as Click refuses it.
    let o = run(pronto().args([
        "check",
        "-e",
        "Idle -> a :: ARPQuerier(lo) -> Discard; Idle -> [1]a",
    ]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(pronto().args([
        "check",
        "-e",
        "Idle -> ICMPPingSource(nosuch0, 1.2.3.4) -> Discard",
    ]));
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("SRC: expected IP address, found `nosuch0`"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
