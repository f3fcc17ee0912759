//! examples/ratelimit.click: the per-subscriber policer, voice-first
//! priority scheduling and the egress shaper over the bundled trace, run
//! on simulated time (`--simtime`) so that every count is exact.

use std::path::PathBuf;

mod common;

use common::{pcap_frames, scratch, tcpdump, Run};

/// True for the trace's voice frames: IPv4/UDP to port 5004.
fn is_voice(f: &[u8]) -> bool {
    f.len() >= 38 && f[12..14] == [8, 0] && f[23] == 17 && f[36..38] == [0x13, 0x8c]
}

/// Runs the example; its output trace lives as long as the scratch
/// directory returned with it.
fn run_example(tag: &str) -> (Run, PathBuf, common::Scratch) {
    let dir = scratch(tag);
    let out_pcap = dir.join("uplink.pcap");
    let run = common::run_example("ratelimit", &["--simtime"], &[("OUT", &out_pcap)]);
    (run, out_pcap, dir)
}

#[test]
fn ratelimit_example_polices_and_prioritises_voice() {
    let (run, out_pcap, _dir) = run_example("ratelimit");
    let report = run.stdout;
    // Trace: 100 voice frames (2 calls), 120 bulk frames; subscriber 3's
    // 200 packets/s and subscriber 1's voice+bulk peak exceed 100/s.
    assert!(report.contains("read           220 packets\n"), "{report}");
    assert!(
        report.contains("policed        42 packets from 3 subscribers\n"),
        "{report}"
    );
    assert!(
        report.contains("voice  in/out  100 100 queue drops 0\n"),
        "{report}"
    );
    assert!(report.contains("bulk   in/out  78 "), "{report}");
    // Voice is never queued behind bulk: all 100 calls' frames leave, in
    // the order they came.
    let frames = pcap_frames(&out_pcap);
    let voice: Vec<&Vec<u8>> = frames.iter().filter(|f| is_voice(f)).collect();
    assert_eq!(voice.len(), 100);
    let seq: Vec<(u8, u16)> = voice
        .iter()
        .map(|f| (f[29], u16::from_be_bytes([f[44], f[45]])))
        .collect();
    let mut sorted = seq.clone();
    sorted.sort_by_key(|&(sub, n)| (n, sub));
    assert_eq!(seq, sorted, "voice frames leave in arrival order");
}

/// The full counts, with the runtime pulling the scheduler's inputs one
/// packet at a time (`Element::as_pull_one`): the same numbers pronto then gives on the Click-equivalent configuration
/// (RatedSplitter per subscriber instead of FlowPolicer), byte-identical to
/// Click's own run of it with `--simtime`.
#[test]
fn ratelimit_example_full_counts() {
    let (run, out_pcap, _dir) = run_example("ratelimit-full");
    let report = run.stdout;
    assert!(
        report.contains("bulk   in/out  78 46 queue drops 32\n"),
        "{report}"
    );
    assert!(report.contains("uplink         47800 bytes"), "{report}");
    let frames = pcap_frames(&out_pcap);
    assert_eq!(frames.len(), 146);
    assert_eq!(frames.iter().filter(|f| is_voice(f)).count(), 100);
    if let Some(text) = tcpdump(&out_pcap) {
        assert_eq!(text.lines().count(), 146);
    }
}
