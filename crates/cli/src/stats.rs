//! `pronto stats NAME`: an instance's element counters as a table, and
//! `--watch`, which refreshes it like `top` with rates between two reads
//! of `GET /v1/instances/NAME/counters`.

use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::table::{Align, Table};

/// A number of a JSON object's field (0 when missing).
fn n(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or(0)
}

/// The drops by reason, `reason=N` joined by spaces (none: empty).
fn reasons(drops: &Value, values: impl Fn(&str, u64) -> Option<String>) -> String {
    drops
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| values(k, v.as_u64().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The element's own counters, `name=N` joined by spaces.
fn own(counters: &Value) -> String {
    reasons(counters, |k, v| Some(format!("{k}={v}")))
}

/// The one-shot table: totals since the instance's configuration started.
pub fn totals_table(elements: &Value) -> String {
    let mut t = Table::new(&[
        ("ELEMENT", Align::Left),
        ("CLASS", Align::Left),
        ("IN", Align::Right),
        ("OUT", Align::Right),
        ("HELD", Align::Right),
        ("DROPS", Align::Right),
        ("REASONS", Align::Left),
        ("COUNTERS", Align::Left),
    ]);
    for e in elements.as_array().into_iter().flatten() {
        let drops: u64 = e["drops"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(_, v)| v.as_u64())
            .sum();
        t.row([
            e["name"].as_str().unwrap_or("").to_string(),
            e["class"].as_str().unwrap_or("").to_string(),
            n(e, "in").to_string(),
            n(e, "out").to_string(),
            n(e, "held").to_string(),
            drops.to_string(),
            reasons(&e["drops"], |k, v| (v > 0).then(|| format!("{k}={v}"))),
            own(&e["counters"]),
        ]);
    }
    t.render()
}

/// Packets per second from `before` to `now` over `secs` (a restarted
/// instance's counters start again from zero: the rate is then what
/// counted since).
fn rate(before: u64, now: u64, secs: f64) -> String {
    let d = if now >= before { now - before } else { now };
    human(d as f64 / secs)
}

/// A rate with a unit prefix: `812`, `12.5k`, `3.20M`.
fn human(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// The `--watch` table: rates between two reads.
pub fn rates_table(before: &Value, now: &Value, secs: f64) -> String {
    let mut t = Table::new(&[
        ("ELEMENT", Align::Left),
        ("CLASS", Align::Left),
        ("IN/s", Align::Right),
        ("OUT/s", Align::Right),
        ("DROPS/s", Align::Right),
        ("HELD", Align::Right),
        ("DROPPING (per second, by reason)", Align::Left),
    ]);
    let old = |name: &str| -> Option<&Value> {
        before["elements"]
            .as_array()?
            .iter()
            .find(|e| e["name"] == name)
    };
    for e in now["elements"].as_array().into_iter().flatten() {
        let name = e["name"].as_str().unwrap_or("");
        let was = old(name).cloned().unwrap_or(Value::Null);
        let dropped = |v: &Value| -> u64 {
            v["drops"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(_, x)| x.as_u64())
                .sum()
        };
        let why = reasons(&e["drops"], |k, v| {
            let b = was["drops"][k].as_u64().unwrap_or(0);
            (v > b).then(|| format!("{k}={}", rate(b, v, secs)))
        });
        t.row([
            name.to_string(),
            e["class"].as_str().unwrap_or("").to_string(),
            rate(n(&was, "in"), n(e, "in"), secs),
            rate(n(&was, "out"), n(e, "out"), secs),
            rate(dropped(&was), dropped(e), secs),
            n(e, "held").to_string(),
            why,
        ]);
    }
    t.render()
}

/// Refreshes `name`'s rates every `interval` seconds, `count` times (or
/// until interrupted). On a terminal each refresh replaces the last;
/// otherwise the tables follow one another.
pub fn watch(
    name: &str,
    interval: f64,
    count: Option<u64>,
    get: impl Fn(&str) -> Result<Value, String>,
) -> Result<(), String> {
    let path = format!("/v1/instances/{name}/counters");
    let tty = std::io::stdout().is_terminal();
    let mut before = get(&path)?;
    let mut t0 = Instant::now();
    let mut shown = 0u64;
    loop {
        std::thread::sleep(Duration::from_secs_f64(interval));
        let now = get(&path)?;
        let t1 = Instant::now();
        let secs = (t1 - t0).as_secs_f64().max(1e-3);
        let table = rates_table(&before, &now, secs);
        let stamp = chrono_like_now();
        if tty {
            // Home and clear, as `top` redraws.
            crate::out!("\x1b[H\x1b[2J");
        }
        crate::outln!("{name}: every {interval}s, at {stamp} (Ctrl-C ends)");
        crate::out!("{table}");
        if !tty {
            crate::outln!();
        }
        shown += 1;
        if count.is_some_and(|c| shown >= c) {
            return Ok(());
        }
        before = now;
        t0 = t1;
    }
}

/// The time of day, UTC, `HH:MM:SS`.
fn chrono_like_now() -> String {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
        % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn rates_come_from_two_reads_and_name_the_reasons() {
        let a = json!({"elements": [
            {"name": "q", "class": "Queue", "in": 100, "out": 50, "held": 10,
             "drops": {"queue_full": 40}, "counters": {}},
            {"name": "c", "class": "Counter", "in": 0, "out": 0, "held": 0,
             "drops": {}, "counters": {"count": 0}},
        ]});
        let b = json!({"elements": [
            {"name": "q", "class": "Queue", "in": 2100, "out": 1050, "held": 12,
             "drops": {"queue_full": 1040}, "counters": {}},
            {"name": "c", "class": "Counter", "in": 30000, "out": 30000, "held": 0,
             "drops": {}, "counters": {"count": 30000}},
        ]});
        assert_eq!(
            super::rates_table(&a, &b, 2.0),
            "ELEMENT  CLASS     IN/s  OUT/s  DROPS/s  HELD  DROPPING (per second, by reason)\n\
             q        Queue     1000    500      500    12  queue_full=500\n\
             c        Counter  15.0k  15.0k        0     0\n"
        );
    }

    #[test]
    fn the_totals_table_lists_reasons_and_counters() {
        let e = json!([
            {"name": "q", "class": "Queue", "in": 20, "out": 0, "held": 5,
             "drops": {"queue_full": 15}, "counters": {"highwater_length": 5}},
        ]);
        assert_eq!(
            super::totals_table(&e),
            "ELEMENT  CLASS  IN  OUT  HELD  DROPS  REASONS        COUNTERS\n\
             q        Queue  20    0     5     15  queue_full=15  highwater_length=5\n"
        );
    }
}
