// A flow monitor as a chain NF: IPFIX records of what leaves the edge
// (the export messages are discarded here; examples/flowmonitor.click
// sends them to a collector).
input -> Strip(14) -> CheckIPHeader -> fm :: FlowMonitor;
fm[0] -> Unstrip(14) -> output;
fm[1] -> Discard;
