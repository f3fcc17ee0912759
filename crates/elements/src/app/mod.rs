//! Click's `app` elements: trace files (tcpdump and IP summary dumps).

pub mod fromdump;
pub mod pcap;
pub mod todump;

#[cfg(test)]
pub(crate) mod testing;
