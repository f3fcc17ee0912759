// InfiniteSource -> Discard: the framework's fixed cost per packet.
c :: InfiniteSource(LENGTH 64, LIMIT 50000000, BURST 32, STOP true) -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
