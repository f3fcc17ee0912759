// A packet counter as a chain NF: touches nothing.
input -> c :: Counter -> output;
