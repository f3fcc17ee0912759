// An MTU clamp as a chain NF: frames longer than 1,000 bytes are cut to
// 1,000 (it changes the packet's length, so the chain counts it as adding
// or removing headers); the counter sees every frame.
input -> c :: Counter -> Truncate(1000) -> output;
