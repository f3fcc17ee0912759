//! Click's `app` elements: trace files (tcpdump and IP summary dumps).

pub mod fromcapdump;
pub mod fromdagdump;
pub mod fromdump;
pub mod fromipsummarydump;
pub mod fromnetflowsumdump;
pub mod fromnlanrdump;
pub mod fromtcpdump;
pub mod ipsumdump;
pub mod md5;
pub mod pcap;
pub mod recordfile;
pub mod todump;
pub mod toipflowdumps;
pub mod toipsummarydump;
pub mod tracetext;

#[cfg(test)]
pub(crate) mod testing;
