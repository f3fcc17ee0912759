// InfiniteSource -> Classifier(12/0800, -).
c :: InfiniteSource(LENGTH 64, LIMIT 50000000, BURST 32, STOP true) -> cl :: Classifier(12/0800, -);
cl[0] -> Discard;
cl[1] -> Discard;
DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));
