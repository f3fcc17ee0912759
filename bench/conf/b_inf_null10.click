// InfiniteSource -> 10 x Null -> Discard: cost of a hop between elements.
c :: InfiniteSource(LENGTH 64, LIMIT 50000000, BURST 32, STOP true) -> Null -> Null -> Null -> Null -> Null -> Null -> Null -> Null -> Null -> Null -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
