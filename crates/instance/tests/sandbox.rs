//! Sandboxes started for real (needs root: user namespaces with id maps
//! to another uid, cgroups). Each test names its sandbox after the test and
//! this process's pid, and every sandbox is dropped (killed, reaped, its
//! cgroup removed) even when an assertion fails.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pronto_sandbox::{Limits, Sandbox, SandboxError, SandboxSpec};

const INSTANCE: &str = env!("CARGO_BIN_EXE_pronto-instance");
const COUNTER: &str = "InfiniteSource(LIMIT 1000, STOP true) -> c :: Counter -> Discard;";

fn root_or_skip(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    eprintln!("SKIPPED {test}: needs root (user namespaces mapped to another uid, cgroups)");
    false
}

fn spec(tag: &str) -> SandboxSpec {
    let mut s = SandboxSpec::new(format!("t{}-{tag}", std::process::id()), INSTANCE);
    s.limits = Limits {
        memory_bytes: Some(64 << 20),
        cpu: Some(0.5),
        cpu_weight: Some(300),
        pids: Some(4),
        nofile: 32,
    };
    s
}

fn spawn(s: &SandboxSpec) -> Sandbox {
    let sb = Sandbox::spawn(s).expect("spawn");
    sb.set_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    sb
}

fn proc_field(pid: u32, file: &str, key: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).expect("proc file");
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/{file}"))
        .trim()
        .to_string()
}

#[test]
fn counter_counts_1000_packets_inside_a_sandbox() {
    if !root_or_skip("counter_counts_1000_packets_inside_a_sandbox") {
        return;
    }
    let mut sb = spawn(&spec("count"));
    sb.ping().expect("ping");
    assert_eq!(sb.configure(COUNTER).expect("config"), "3 elements");
    sb.run().expect("run");
    sb.wait_stopped().expect("the run ends");
    assert_eq!(sb.read("c.count").expect("read"), "1000");
    sb.write("c.reset", "").expect("reset");
    assert_eq!(sb.read("c.count").expect("read"), "0");
    match sb.read("nosuch.count") {
        Err(SandboxError::Remote(t)) => assert_eq!(t, "no element named `nosuch`"),
        other => panic!("expected ERR, got {other:?}"),
    }
    let st = sb.stop().expect("stop");
    assert_eq!(st.code(), Some(0));
}

#[test]
fn a_sleeping_router_with_timers_and_output_runs_under_the_allow_list() {
    if !root_or_skip("a_sleeping_router_with_timers_and_output_runs_under_the_allow_list") {
        return;
    }
    let mut s = spec("idle");
    s.stdout = pronto_sandbox::Output::Null;
    s.stderr = pronto_sandbox::Output::Null;
    let mut sb = spawn(&s);
    // The source sleeps 20 ms between packets (idle sleep, clock reads);
    // Print writes to stdout (here /dev/null); a write handler is called
    // before the run.
    sb.configure(
        "TimedSource(INTERVAL 0.02, LIMIT 5, STOP true) -> Print(sandboxed) \
         -> c :: Counter -> Discard;",
    )
    .expect("config");
    sb.write("c.reset", "").expect("reset");
    let start = Instant::now();
    sb.run().expect("run");
    sb.wait_stopped().expect("the run ends");
    assert!(start.elapsed() >= Duration::from_millis(80));
    assert_eq!(sb.read("c.count").expect("read"), "5");
    assert_eq!(sb.stop().expect("stop").code(), Some(0));
}

#[test]
fn instance_is_pid_1_without_network_ids_or_capabilities() {
    if !root_or_skip("instance_is_pid_1_without_network_ids_or_capabilities") {
        return;
    }
    let mut sb = spawn(&spec("ns"));
    sb.ping().expect("ping");
    let pid = sb.pid();
    // PID 1 in its own PID namespace.
    assert_eq!(proc_field(pid, "status", "NSpid:"), format!("{pid}\t1"));
    // uid/gid 0 inside are host 65534; no capabilities; no_new_privs.
    assert_eq!(
        proc_field(pid, "status", "Uid:"),
        "65534\t65534\t65534\t65534"
    );
    assert_eq!(
        proc_field(pid, "status", "Gid:"),
        "65534\t65534\t65534\t65534"
    );
    assert_eq!(proc_field(pid, "status", "Groups:"), "");
    for cap in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
        assert_eq!(proc_field(pid, "status", cap), "0000000000000000", "{cap}");
    }
    assert_eq!(proc_field(pid, "status", "NoNewPrivs:"), "1");
    let uid_map = std::fs::read_to_string(format!("/proc/{pid}/uid_map")).expect("uid_map");
    assert_eq!(
        uid_map.split_whitespace().collect::<Vec<_>>(),
        ["0", "65534", "1"]
    );
    // Only the loopback interface in its network namespace.
    let dev = std::fs::read_to_string(format!("/proc/{pid}/net/dev")).expect("net/dev");
    let ifaces: Vec<&str> = dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .collect();
    assert_eq!(ifaces, ["lo"]);
    // Every namespace differs from ours.
    for ns in ["user", "pid", "mnt", "net", "ipc", "uts"] {
        let mine = std::fs::read_link(format!("/proc/self/ns/{ns}")).expect("ns");
        let theirs = std::fs::read_link(format!("/proc/{pid}/ns/{ns}")).expect("ns");
        assert_ne!(mine, theirs, "{ns} namespace shared");
    }
    // Its root: the program, the library directories, nothing else.
    let mut root: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/root"))
        .expect("root")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    root.sort();
    let mut want: Vec<String> = vec!["pronto".into(), "usr".into()];
    for d in ["lib", "lib64"] {
        if Path::new("/").join(d).exists() {
            want.push(d.into());
        }
    }
    want.sort();
    assert_eq!(root, want);
    // Descriptors: 0-2, the control socket, the signalfd the switch's
    // doorbell signal is read from, and the packet pool made ahead of the
    // first configuration (a memfd, made by the router thread while the
    // request thread already answers).
    let fds = || -> Vec<u32> {
        let mut v: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .expect("fd")
            .map(|e| {
                e.expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .parse()
                    .expect("num")
            })
            .collect();
        v.sort();
        v
    };
    let t0 = Instant::now();
    while fds().len() < 6 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(fds(), [0, 1, 2, 3, 4, 5]);
    let bell = std::fs::read_link(format!("/proc/{pid}/fd/4")).expect("fd 4");
    assert_eq!(bell.to_string_lossy(), "anon_inode:[signalfd]");
    let pool = std::fs::read_link(format!("/proc/{pid}/fd/5")).expect("fd 5");
    assert!(
        pool.to_string_lossy().starts_with("/memfd:pronto-pool"),
        "{}",
        pool.display()
    );
    // Seccomp: off until the first configuration, then filtering (2).
    assert_eq!(proc_field(pid, "status", "Seccomp:"), "0");
    sb.configure(COUNTER).expect("config");
    assert_eq!(proc_field(pid, "status", "Seccomp:"), "2");
    // rlimits.
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    let line = |k: &str| {
        limits
            .lines()
            .find(|l| l.starts_with(k))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .expect("limit line")
    };
    assert_eq!(line("Max open files"), "Max open files 32 32 files");
    assert_eq!(line("Max core file size"), "Max core file size 0 0 bytes");
}

/// The calling thread's signal mask (SigBlk of /proc/thread-self/status).
fn own_signal_mask() -> String {
    let text = std::fs::read_to_string("/proc/thread-self/status").expect("status");
    text.lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .expect("SigBlk")
        .trim()
        .to_string()
}

#[test]
fn sandboxes_started_from_many_threads_at_once_each_get_their_own_ids() {
    if !root_or_skip("sandboxes_started_from_many_threads_at_once_each_get_their_own_ids") {
        return;
    }
    // Each spawn's child shares the caller's memory until it executes the
    // instance, and another thread writes its id maps: spawns from four
    // threads at once must each come up as pid 1 of their own namespaces,
    // mapped to their own host ids, and leave the caller's mask as it was.
    // (Checked by the spawning thread: an instance dies with it.)
    let started: u32 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4u32)
            .map(|t| {
                s.spawn(move || {
                    let before = own_signal_mask();
                    let mut got = Vec::new();
                    for i in 0..3u32 {
                        let mut sp = spec(&format!("many{t}-{i}"));
                        let id = 60000 + t * 10 + i;
                        sp.host_uid = id;
                        sp.host_gid = id;
                        got.push((spawn(&sp), id));
                        assert_eq!(own_signal_mask(), before, "the caller's mask");
                    }
                    // Their sockets live high in the descriptor table,
                    // out of the low end each start copies (where the
                    // limit reaches that far).
                    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
                        .current
                        .unwrap_or(u64::MAX);
                    if soft > 1100 {
                        let high = std::fs::read_dir("/proc/self/fd")
                            .expect("fd")
                            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                            .filter(|&fd| fd >= 1024)
                            .count();
                        assert!(high >= 3, "{high} descriptors at 1024 and up");
                    }
                    for (sb, id) in &mut got {
                        sb.ping().expect("ping");
                        let pid = sb.pid();
                        assert_eq!(proc_field(pid, "status", "NSpid:"), format!("{pid}\t1"));
                        let ids = format!("{id}\t{id}\t{id}\t{id}");
                        assert_eq!(proc_field(pid, "status", "Uid:"), ids);
                        assert_eq!(proc_field(pid, "status", "Gid:"), ids);
                    }
                    got.len() as u32
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("spawning thread"))
            .sum()
    });
    assert_eq!(started, 12);
}

#[test]
fn host_files_are_not_visible() {
    if !root_or_skip("host_files_are_not_visible") {
        return;
    }
    let mut sb = spawn(&spec("files"));
    match sb.configure("FromDump(/etc/passwd) -> Discard;") {
        Err(SandboxError::Remote(t)) => assert!(
            t.contains("/etc/passwd: No such file or directory"),
            "unexpected error: {t}"
        ),
        other => panic!("expected a configuration error, got {other:?}"),
    }
    // The view is read-only: the program file exists but is no pcap.
    match sb.configure("FromDump(/pronto) -> Discard;") {
        Err(SandboxError::Remote(t)) => {
            assert!(
                t.contains("/pronto: not a tcpdump file"),
                "unexpected error: {t}"
            )
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[test]
fn bad_reconfiguration_is_rejected_and_the_old_one_stays() {
    if !root_or_skip("bad_reconfiguration_is_rejected_and_the_old_one_stays") {
        return;
    }
    let mut sb = spawn(&spec("reconf"));
    sb.configure(COUNTER).expect("config");
    match sb.configure("a :: NoSuchElement -> Discard;") {
        Err(SandboxError::Remote(t)) => assert!(t.contains("NoSuchElement"), "{t}"),
        other => panic!("expected ERR, got {other:?}"),
    }
    // After lock-down, opening files is refused (EPERM), not fatal.
    match sb.configure("FromDump(/pronto) -> Discard;") {
        Err(SandboxError::Remote(t)) => {
            assert!(t.contains("/pronto: Operation not permitted"), "{t}")
        }
        other => panic!("expected ERR, got {other:?}"),
    }
    sb.run().expect("run");
    sb.wait_stopped().expect("the run ends");
    assert_eq!(sb.read("c.count").expect("read"), "1000");
}

#[test]
fn a_system_call_outside_the_allow_list_kills_the_instance() {
    if !root_or_skip("a_system_call_outside_the_allow_list_kills_the_instance") {
        return;
    }
    let mut sb = spawn(&spec("seccomp"));
    sb.configure(COUNTER).expect("config");
    // FromDevice opens a packet socket while configuring: socket(2) is not
    // on the list once the instance is locked down.
    match sb.configure("FromDevice(lo) -> Discard;") {
        Err(SandboxError::Ended { status, .. }) => {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.and_then(|s| s.signal()), Some(libc::SIGSYS));
        }
        other => panic!("expected the instance to die, got {other:?}"),
    }
    let e = sb.read("c.count").expect_err("dead");
    assert!(e.to_string().contains("SIGSYS"), "{e}");
}

#[test]
fn before_lock_down_a_packet_socket_is_refused_for_lack_of_capabilities() {
    if !root_or_skip("before_lock_down_a_packet_socket_is_refused_for_lack_of_capabilities") {
        return;
    }
    let mut sb = spawn(&spec("nocap"));
    match sb.configure("FromDevice(lo) -> Discard;") {
        Err(SandboxError::Remote(t)) => assert!(t.contains("Operation not permitted"), "{t}"),
        other => panic!("expected a configuration error, got {other:?}"),
    }
    sb.ping().expect("still alive");
}

#[test]
fn the_memory_limit_is_enforced() {
    if !root_or_skip("the_memory_limit_is_enforced") {
        return;
    }
    let mut s = spec("oom");
    // 16 MB: room for the instance to start even when the machine is
    // busy (8 MB was close enough to its start-up size that a loaded CI
    // run saw it killed before its first answer), far below the pool.
    s.limits.memory_bytes = Some(16 << 20);
    // A 32,768-slot pool is 71 MB, mapped and touched when configuring.
    s.args = vec!["--pool-slots".into(), "32768".into()];
    s.stderr = pronto_sandbox::Output::Null;
    let mut sb = spawn(&s);
    sb.ping().expect("ping");
    match sb.configure(COUNTER) {
        Err(SandboxError::Ended { status, oom_kills }) => {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.and_then(|s| s.signal()), Some(libc::SIGKILL));
            assert!(oom_kills.unwrap_or(0) >= 1, "oom_kills {oom_kills:?}");
        }
        other => panic!("expected an OOM kill, got {other:?}"),
    }
    let peak = sb.cgroup().and_then(|c| c.memory_peak()).expect("peak");
    assert!(peak <= 16 << 20, "peak {peak}");
}

fn cgroup_dirs(name: &str) -> Vec<PathBuf> {
    ["memory", "cpu", "pids"]
        .iter()
        .map(|c| {
            Path::new("/sys/fs/cgroup")
                .join(c)
                .join("pronto")
                .join(name)
        })
        .collect()
}

#[test]
fn cgroup_limits_are_written_and_removed_on_drop() {
    if !root_or_skip("cgroup_limits_are_written_and_removed_on_drop") {
        return;
    }
    let s = spec("cg");
    let v1 = pronto_sandbox::cgroup::detect(Path::new("/sys/fs/cgroup"))
        == pronto_sandbox::cgroup::Version::V1;
    let own = || std::fs::read_to_string("/proc/thread-self/cgroup").expect("own cgroups");
    let before = own();
    let mut sb = spawn(&s);
    sb.ping().expect("ping");
    // On v1 the spawning thread entered the sandbox's cgroups for the
    // clone: it is back in its own, and only the child is in them.
    assert_eq!(own(), before);
    let dirs: Vec<PathBuf> = sb.cgroup().expect("cgroup").dirs().to_vec();
    let read = |p: PathBuf| {
        std::fs::read_to_string(p)
            .expect("cgroup file")
            .trim()
            .to_string()
    };
    let pid = sb.pid().to_string();
    if v1 {
        assert_eq!(dirs, cgroup_dirs(&s.name));
        assert_eq!(
            read(dirs[0].join("memory.limit_in_bytes")),
            (64u64 << 20).to_string()
        );
        assert_eq!(read(dirs[1].join("cpu.cfs_quota_us")), "50000");
        assert_eq!(read(dirs[1].join("cpu.cfs_period_us")), "100000");
        assert_eq!(read(dirs[1].join("cpu.shares")), "3072", "weight 300");
        assert_eq!(read(dirs[2].join("pids.max")), "4");
        for d in &dirs {
            assert_eq!(read(d.join("cgroup.procs")), pid);
        }
    } else {
        assert_eq!(read(dirs[0].join("memory.max")), (64u64 << 20).to_string());
        assert_eq!(read(dirs[0].join("cpu.max")), "50000 100000");
        assert_eq!(read(dirs[0].join("cpu.weight")), "300");
        assert_eq!(read(dirs[0].join("pids.max")), "4");
        assert_eq!(read(dirs[0].join("cgroup.procs")), pid);
    }
    // A running sandbox's limits change in place (raised, then lowered).
    let cg = sb.cgroup().expect("cgroup");
    for mem in [128u64 << 20, 16 << 20] {
        cg.update(&Limits {
            memory_bytes: Some(mem),
            cpu: Some(0.25),
            cpu_weight: Some(50),
            pids: Some(6),
            ..Limits::default()
        })
        .expect("update");
        let w = if v1 {
            read(dirs[1].join("cpu.shares"))
        } else {
            read(dirs[0].join("cpu.weight"))
        };
        assert_eq!(w, if v1 { "512" } else { "50" });
        let (m, c, p) = if v1 {
            (
                read(dirs[0].join("memory.limit_in_bytes")),
                read(dirs[1].join("cpu.cfs_quota_us")),
                read(dirs[2].join("pids.max")),
            )
        } else {
            (
                read(dirs[0].join("memory.max")),
                read(dirs[0].join("cpu.max")),
                read(dirs[0].join("pids.max")),
            )
        };
        assert_eq!(m, mem.to_string());
        assert_eq!(c, if v1 { "25000" } else { "25000 100000" });
        assert_eq!(p, "6");
    }
    drop(sb);
    for d in &dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
}

#[test]
fn cgroup_v2_is_used_where_cgroup_controllers_exists() {
    if !root_or_skip("cgroup_v2_is_used_where_cgroup_controllers_exists") {
        return;
    }
    // This machine mounts an empty v2 hierarchy beside v1; hosts with only
    // v2 have it at /sys/fs/cgroup itself.
    let root = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .into_iter()
        .map(PathBuf::from)
        .find(|r| r.join("cgroup.controllers").exists());
    let Some(root) = root else {
        eprintln!("SKIPPED cgroup_v2_is_used_where_cgroup_controllers_exists: no cgroup v2 mount");
        return;
    };
    let controllers = std::fs::read_to_string(root.join("cgroup.controllers")).expect("read");
    let mut s = spec("v2");
    s.cgroup_root = root.clone();
    if !controllers.split_whitespace().any(|c| c == "memory") {
        // Asking for a memory limit where v2 offers no memory controller
        // names the file and what to do.
        let e = Sandbox::spawn(&s).expect_err("no memory controller");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!(
                "cgroup v2 memory controller not available at {}",
                root.join("cgroup.controllers").display()
            )),
            "{text}"
        );
        s.limits = Limits {
            memory_bytes: None,
            cpu: None,
            cpu_weight: None,
            pids: None,
            nofile: 32,
        };
    }
    let mut sb = spawn(&s);
    sb.ping().expect("ping");
    let dir = root.join("pronto").join(&s.name);
    assert_eq!(
        sb.cgroup().expect("cg").version(),
        pronto_sandbox::cgroup::Version::V2
    );
    assert_eq!(sb.cgroup().expect("cg").dirs(), std::slice::from_ref(&dir));
    assert_eq!(
        std::fs::read_to_string(dir.join("cgroup.procs"))
            .expect("procs")
            .trim(),
        sb.pid().to_string()
    );
    drop(sb);
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn errors_name_the_step_the_path_and_the_errno() {
    if !root_or_skip("errors_name_the_step_the_path_and_the_errno") {
        return;
    }
    // No library directories: the dynamic loader is missing.
    let mut s = spec("nolib");
    s.lib_dirs.clear();
    let e = Sandbox::spawn(&s).expect_err("exec fails").to_string();
    assert!(
        e.starts_with(&format!(
            "sandbox set-up: execve {INSTANCE} (bound at /pronto): No such file or directory (os error 2); \
             the program's dynamic loader"
        )),
        "{e}"
    );
    assert!(!cgroup_dirs(&s.name)[0].exists(), "cgroup left behind");

    // A v1 hierarchy without the memory controller.
    let fake = std::env::temp_dir().join(format!("pronto-fake-cgroup-{}", std::process::id()));
    std::fs::create_dir_all(&fake).expect("mkdir");
    let mut s = spec("nocg");
    s.cgroup_root = fake.clone();
    let e = Sandbox::spawn(&s).expect_err("no controller").to_string();
    std::fs::remove_dir_all(&fake).expect("cleanup");
    assert!(
        e.starts_with(&format!(
            "cgroup v1 memory controller not available at {}/memory: mount it",
            fake.display()
        )),
        "{e}"
    );

    // A name that cannot be a cgroup directory.
    let mut s = spec("x");
    s.name = "../escape".into();
    let e = Sandbox::spawn(&s).expect_err("bad name").to_string();
    assert!(e.starts_with("sandbox spec: name: `../escape`"), "{e}");

    // A missing extra path.
    let mut s = spec("ro");
    s.ro_paths = vec!["/no/such/dir".into()];
    let e = Sandbox::spawn(&s).expect_err("missing").to_string();
    assert_eq!(
        e,
        "ro_paths: looking up /no/such/dir: No such file or directory (os error 2)"
    );
}

#[test]
fn kill_and_wait_report_the_signal() {
    if !root_or_skip("kill_and_wait_report_the_signal") {
        return;
    }
    let mut sb = spawn(&spec("kill"));
    sb.ping().expect("ping");
    assert!(sb.try_wait().expect("try_wait").is_none());
    assert!(sb.pss_bytes().expect("pss") > 0);
    sb.kill().expect("kill");
    use std::os::unix::process::ExitStatusExt;
    let st = sb.wait().expect("wait");
    assert_eq!(st.signal(), Some(libc::SIGKILL));
    assert_eq!(sb.try_wait().expect("again"), Some(st));
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Start-up time and memory, sandboxed and not. Run with
/// `cargo test -p pronto-sandbox --release --test sandbox -- --ignored --nocapture measure`.
#[test]
#[ignore = "measurement; prints figures"]
fn measure_spawn_and_memory() {
    if !root_or_skip("measure_spawn_and_memory") {
        return;
    }
    const N: usize = 200;
    let summary = |label: &str, mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        println!(
            "{label}: median {:.3} ms, p99 {:.3} ms, min {:.3} ms (n={})",
            percentile(&v, 0.5),
            percentile(&v, 0.99),
            v[0],
            v.len()
        );
    };
    for (label, cgroup) in [
        ("sandbox (6 namespaces + cgroup v1)", true),
        ("sandbox without cgroup", false),
    ] {
        let mut t = Vec::with_capacity(N);
        for i in 0..N {
            let mut s = spec(&format!("m{i}"));
            s.use_cgroup = cgroup;
            let start = Instant::now();
            let mut sb = Sandbox::spawn(&s).expect("spawn");
            sb.ping().expect("ping");
            t.push(start.elapsed().as_secs_f64() * 1e3);
        }
        summary(&format!("spawn to first reply, {label}"), t);
    }
    let mut t = Vec::with_capacity(N);
    for _ in 0..N {
        let start = Instant::now();
        let (mut child, sock) =
            pronto_sandbox::spawn_unsandboxed(Path::new(INSTANCE), &[]).expect("spawn");
        pronto_sandbox::proto::send_frame(&sock, b"PING", &[]).expect("send");
        pronto_sandbox::proto::recv_frame(&sock)
            .expect("recv")
            .expect("reply");
        t.push(start.elapsed().as_secs_f64() * 1e3);
        drop(sock);
        child.wait().expect("wait");
    }
    summary("spawn to first reply, plain fork+exec", t);

    // Memory of an idle instance: after PING, and configured (small pool).
    let mut sb = Sandbox::spawn(&spec("pss")).expect("spawn");
    sb.ping().expect("ping");
    std::thread::sleep(Duration::from_millis(50));
    println!(
        "PSS idle sandboxed instance (no configuration): {} KiB",
        sb.pss_bytes().expect("pss") / 1024
    );
    sb.configure("InfiniteSource(LIMIT 1) -> c :: Counter -> Discard;")
        .expect("config");
    println!(
        "PSS configured sandboxed instance (512-slot pool): {} KiB",
        sb.pss_bytes().expect("pss") / 1024
    );
    let (mut child, sock) =
        pronto_sandbox::spawn_unsandboxed(Path::new(INSTANCE), &[]).expect("spawn");
    pronto_sandbox::proto::send_frame(&sock, b"PING", &[]).expect("send");
    pronto_sandbox::proto::recv_frame(&sock).expect("recv");
    let pss = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", child.id())).expect("smaps");
    println!(
        "PSS idle plain instance: {}",
        pss.lines().find(|l| l.starts_with("Pss:")).unwrap_or("?")
    );
    drop(sock);
    child.wait().expect("wait");
}

#[test]
fn handlers_answer_and_reconfiguration_works_while_the_router_runs() {
    if !root_or_skip("handlers_answer_and_reconfiguration_works_while_the_router_runs") {
        return;
    }
    let mut sb = spawn(&spec("live"));
    sb.configure("c :: Counter; TimedSource(0.002s) -> c -> Discard;")
        .expect("config");
    sb.run().expect("run");
    let count =
        |sb: &mut Sandbox, h: &str| -> u64 { sb.read(h).expect("read").parse().expect("a number") };
    let t0 = Instant::now();
    while count(&mut sb, "c.count") < 3 {
        assert!(t0.elapsed() < Duration::from_secs(10), "never counted");
        std::thread::sleep(Duration::from_millis(5));
    }
    sb.write("c.reset", "").expect("reset while running");
    // A control socket's arguments are checked here; the daemon opens it.
    match sb.configure("ControlSocket(SCTP, 1);") {
        Err(SandboxError::Remote(t)) => {
            assert!(
                t.contains("TYPE: expected TCP or UNIX, found `SCTP`"),
                "{t}"
            )
        }
        other => panic!("expected ERR, got {other:?}"),
    }
    // A bad configuration is refused; the old one keeps running.
    match sb.configure("c :: Counter; Nope -> c;") {
        Err(SandboxError::Remote(t)) => assert!(t.contains("Nope"), "{t}"),
        other => panic!("expected ERR, got {other:?}"),
    }
    let before = count(&mut sb, "c.count");
    let t0 = Instant::now();
    while count(&mut sb, "c.count") <= before {
        assert!(t0.elapsed() < Duration::from_secs(10), "stopped counting");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A good one replaces it and runs at once.
    assert_eq!(
        sb.configure("d :: Counter; TimedSource(0.002s) -> d -> Discard;")
            .expect("reconfigure"),
        "3 elements"
    );
    let t0 = Instant::now();
    while count(&mut sb, "d.count") < 3 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the new one never counted"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    match sb.read("c.count") {
        Err(SandboxError::Remote(t)) => assert_eq!(t, "no element named `c`"),
        other => panic!("expected ERR, got {other:?}"),
    }
    assert_eq!(sb.stop().expect("stop").code(), Some(0));
}

/// A cgroup file of sandbox `name` for `controller` (cgroup v1's
/// per-controller tree, else v2's single one).
fn cgroup_file(name: &str, controller: &str, file: &str) -> String {
    let v1 = Path::new("/sys/fs/cgroup")
        .join(controller)
        .join("pronto")
        .join(name)
        .join(file);
    let v2 = Path::new("/sys/fs/cgroup/pronto").join(name).join(file);
    std::fs::read_to_string(&v1)
        .or_else(|_| std::fs::read_to_string(&v2))
        .unwrap_or_else(|e| panic!("{} / {}: {e}", v1.display(), v2.display()))
}

fn stat_field(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `{key}` in {text:?}"))
}

/// A hostile process inside a sandbox (a shell standing for code that took
/// over an instance before its lock-down) forks without bound and spins on
/// every core: the task limit stops the forks, the CPU quota throttles it,
/// and a neighbouring instance keeps answering and counting meanwhile.
#[test]
fn a_fork_bomb_and_a_cpu_hog_are_contained() {
    if !root_or_skip("a_fork_bomb_and_a_cpu_hog_are_contained") {
        return;
    }
    let mut s = spec("bomb");
    s.program = "/bin/dash".into();
    s.args = vec![
        "-c".into(),
        // The forking part runs in a subshell: a shell whose fork fails
        // exits, and the sandbox ends with its first process.
        "(i=0; while [ $i -lt 200 ]; do (while :; do :; done) & i=$((i+1)); done); \
         while :; do :; done"
            .into(),
    ];
    s.limits.cpu = Some(0.2);
    s.limits.pids = Some(4);
    s.stderr = pronto_sandbox::Output::Null;
    let bomb = Sandbox::spawn(&s).expect("spawn the hostile process");

    let mut n = spawn(&spec("neighbour"));
    n.configure("s :: RatedSource(RATE 1000) -> c :: Counter -> Discard;")
        .expect("config");
    n.run().expect("run");
    std::thread::sleep(Duration::from_millis(1500));

    let pids: u64 = cgroup_file(&s.name, "pids", "pids.current")
        .trim()
        .parse()
        .expect("pids.current");
    assert!(pids <= 4, "{pids} tasks under a limit of 4");
    let refused = stat_field(&cgroup_file(&s.name, "pids", "pids.events"), "max");
    assert!(refused > 0, "no fork was refused");
    let cpu = cgroup_file(&s.name, "cpu", "cpu.stat");
    assert!(
        stat_field(&cpu, "nr_throttled") > 0,
        "never throttled: {cpu}"
    );

    // The neighbour: answers at once and counted about 1,000 a second.
    let t0 = Instant::now();
    let count: u64 = n.read("c.count").expect("read").parse().expect("count");
    assert!(t0.elapsed() < Duration::from_millis(500), "slow answer");
    assert!(count >= 1000, "the neighbour counted only {count}");
    drop(bomb);
}

#[test]
fn a_nested_cgroup_parent_is_made_ended_early_and_removed_whole() {
    if !root_or_skip("a_nested_cgroup_parent_is_made_ended_early_and_removed_whole") {
        return;
    }
    let root = Path::new("/sys/fs/cgroup");
    let parent = format!("pronto/nest-{}", std::process::id());
    let mut s = spec("nest");
    s.cgroup_parent = parent.clone();
    let mut a = spawn(&s);
    a.ping().expect("ping");
    let dirs: Vec<PathBuf> = a.cgroup().expect("cgroup").dirs().to_vec();
    for d in &dirs {
        assert!(d.starts_with(root) && d.ends_with(Path::new(&parent).join(&s.name)));
        assert!(d.exists());
    }
    // What it holds: its program and its packet pool, a few MB.
    let used = a
        .cgroup()
        .expect("cgroup")
        .memory_in_use()
        .expect("memory in use");
    assert!(used > (256 << 10) && used < (64 << 20), "{used}");
    assert_eq!(
        pronto_sandbox::cgroup::children(root, &parent),
        vec![s.name.clone()]
    );
    // Ended now, while the handle lives on: the cgroup is gone at once.
    a.end();
    for d in &dirs {
        assert!(!d.exists(), "{} is left after end()", d.display());
    }
    assert!(a.try_wait().expect("status").is_some());
    // The parent goes whole, with a cgroup a sandbox left (its process
    // gone) under it.
    let b = spawn(&s);
    let pid = b.pid();
    std::mem::forget(b);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).expect("pid"),
        rustix::process::Signal::KILL,
    )
    .expect("kill");
    let _ = rustix::process::waitpid(
        rustix::process::Pid::from_raw(pid as i32),
        rustix::process::WaitOptions::empty(),
    );
    pronto_sandbox::cgroup::remove_tree(root, &parent).expect("removed");
    for d in pronto_sandbox::cgroup::parent_dirs(root, &parent) {
        assert!(!d.exists(), "{} is left", d.display());
    }
}
