//! `pronto bench switch` at its shortest writes its CSV and the PNG drawn
//! from it: the figure of a real run, checked by decoding it.

use std::process::Command;

#[test]
fn switch_experiment_writes_csv_and_png() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args([
            "bench",
            "switch",
            "--duration",
            "0.05",
            "--runs",
            "1",
            "--no-pin",
        ])
        .arg("--out")
        .arg(dir.path())
        .output()
        .expect("pronto runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (csv, png) = (dir.path().join("switch.csv"), dir.path().join("switch.png"));
    assert!(
        stdout.contains(&format!("wrote {} and {}", csv.display(), png.display())),
        "{stdout}"
    );

    let text = std::fs::read_to_string(&csv).expect("the CSV");
    let sizes: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap_or_default())
        .collect();
    assert_eq!(sizes, ["64", "128", "256", "512", "1024", "1500"]);

    let file = std::fs::File::open(&png).expect("the PNG");
    let mut reader = png::Decoder::new(file).read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a PNG frame");
    assert_eq!((info.width, info.height), (770, 462));
    let px = &buf[..info.buffer_size()];
    assert!(
        px.chunks_exact(3).any(|p| p != [255, 255, 255]),
        "not all white"
    );
    // The first line is matplotlib's first colour (tab:blue).
    let blue = px
        .chunks_exact(3)
        .filter(|p| *p == [0x1f, 0x77, 0xb4])
        .count();
    assert!(blue > 20, "the first series is drawn: {blue} pixels");
}
