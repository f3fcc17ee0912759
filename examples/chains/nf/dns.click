// A DNS monitor as a chain NF: counts packets to port 53, passes all.
input -> Strip(14) -> MarkIPHeader -> p :: IPClassifier(dst port 53, -);
p[0] -> dns :: Counter -> j :: Unstrip(14) -> output;
p[1] -> j;
