// InfiniteSource -> Tee(2) -> 2 x Discard.
c :: InfiniteSource(LENGTH 64, LIMIT 50000000, BURST 32, STOP true) -> t :: Tee(2);
t[0] -> Discard;
t[1] -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
