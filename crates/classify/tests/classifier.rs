//! Classifier (offset/value pattern) behaviour.

mod common;
use common::*;
use pronto_classify::Program;

fn arp(op: u8) -> Vec<u8> {
    let mut f = vec![
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // destination MAC (broadcast)
        0, 1, 2, 3, 4, 5, // source MAC
        0x08, 0x06, // ethertype ARP
        0x00, 0x01, // hardware type Ethernet
        0x08, 0x00, // protocol type IPv4
        6, 4, // address lengths
        0x00, op, // operation
    ];
    f.resize(42, 0);
    f
}

#[test]
fn ethernet_example() {
    let p = Program::classifier(&["12/0806 20/0001", "12/0806 20/0002", "12/0800", "-"])
        .expect("compiles");
    assert_eq!(p.noutputs(), 4);
    assert_eq!(p.classify(&arp(1), 0), Some(0));
    assert_eq!(p.classify(&arp(2), 0), Some(1));
    assert_eq!(
        p.classify(&eth(&tcp_pkt([1, 2, 3, 4], [5, 6, 7, 8], 1, 2)), 0),
        Some(2)
    );
    let mut other = arp(1);
    other[12] = 0x86;
    other[13] = 0xdd;
    assert_eq!(p.classify(&other, 0), Some(3));
    assert_eq!(p.classify(&[], 0), Some(3));
    // `nh` is ignored.
    assert_eq!(p.classify(&arp(1), 7), Some(0));
}

#[test]
fn masks_and_wildcards() {
    let pkt: [u8; 8] = [
        0x12, 0x34, // bytes 0-1
        0x56, 0x78, // bytes 2-3
        0x9a, 0xbc, // bytes 4-5
        0xde, 0xf0, // bytes 6-7
    ];
    let one = |pat: &str| {
        Program::classifier(&[pat])
            .expect("compiles")
            .classify(&pkt, 0)
            == Some(0)
    };
    assert!(one("0/1234"));
    assert!(one("0/12345678"));
    assert!(one("2/56789abc")); // crosses a word boundary
    assert!(one("3/789ABCDE")); // upper-case hex
    assert!(one("0/1234 4/9abc"));
    assert!(!one("0/1234 4/9abd"));
    assert!(one("0/1f%f0")); // only the high nibble is checked
    assert!(!one("0/1f%ff"));
    assert!(!one("0/ff34%0fff"));
    assert!(one("0/0234%0fff"));
    assert!(one("0/1?3?"));
    assert!(one("0/??34"));
    assert!(one("0/????"));
    assert!(!one("0/2?"));
    assert!(one("0/12%f?")); // `?` in the mask means "ignore"
    assert!(one("1/00%00"));
    assert!(one("!0/9999"));
    assert!(!one("!0/1234"));
    assert!(one("0/1234 !2/0000"));
    assert!(one("! 0/9999"));
    assert!(one(""));
    assert!(one("-"));
}

#[test]
fn short_packets() {
    let pkt = [0x08u8, 0x00, 0x45];
    let one = |pat: &str| {
        Program::classifier(&[pat])
            .expect("compiles")
            .classify(&pkt, 0)
            == Some(0)
    };
    assert!(one("0/0800"));
    assert!(one("0/080045"));
    assert!(!one("0/08004500")); // byte 3 is missing
    assert!(!one("12/0800"));
    assert!(one("!12/0800")); // a negated clause matches short packets
    assert!(one("0/080045?? "));
    assert!(one("0/08004500%ffffff00")); // missing byte is masked out
    assert!(!one("100/00"));
    assert!(one("100/??")); // nothing checked
}

#[test]
fn errors() {
    for (pat, needle) in [
        ("x/12", "expected a digit"),
        ("12", "expected `/`"),
        ("12:34", "expected `/`"),
        ("12/", "less than 2 hex digits"),
        ("12/1", "less than 2 hex digits"),
        ("12/123", "odd number"),
        ("12/1234%ff", "too few"),
        ("12/12%ffff", "too many"),
        ("12/0800x", "expected a digit"),
        ("!", "expected a digit"),
    ] {
        let e = Program::classifier(&["-", pat]).expect_err(pat);
        assert_eq!(e.arg, 1, "{pat}");
        assert!(
            e.message.starts_with("Classifier pattern 1: "),
            "{}",
            e.message
        );
        assert!(e.message.contains(needle), "{pat}: {}", e.message);
    }
}
