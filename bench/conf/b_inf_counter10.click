// InfiniteSource -> 10 x Counter -> Discard.
c :: InfiniteSource(LENGTH 64, LIMIT 50000000, BURST 32, STOP true) -> Counter -> Counter -> Counter -> Counter -> Counter -> Counter -> Counter -> Counter -> Counter -> Counter -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
