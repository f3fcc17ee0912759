// A packet counter as a chain NF: touches no field (it reads only the
// length, for its byte count).
input -> c :: Counter -> output;
