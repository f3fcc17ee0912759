"""Rate arithmetic for the make.py generators of cases 50-54.

Plain Python models of Click's jiffy token bucket (include/click/tokenbucket.hh,
32-bit tokens, CLICK_HZ 1000) and of RatedUnqueue's capacity rule.  The cases
are built so that every decision happens while the bucket is still full from
its first refill or well away from the next refill (runs far shorter than the
refill time of the token a refused packet lacks), so wall-clock timing does not
matter; burst_margin() and time_to_fill() check that.
"""

MAX = 0xFFFFFFFF
HZ = 1000
BW_THRESH = 131072


def capacity_tokens(rate, dur_ms=20, size=None, bandwidth=False):
    t = size if size is not None else min(rate * dur_ms // 1000, MAX)
    if bandwidth:
        t = min(t + BW_THRESH, MAX)
    return t if t else 1


class Bucket:
    def __init__(self, rate, capacity):
        if capacity == 0:
            rate, capacity = 0, MAX
        if rate:
            capacity = max(capacity, (rate - 1) // HZ + 1)
        self.scale = MAX // capacity
        l = rate * self.scale // HZ
        self.per_tick = (l if l else 1) if rate else 0
        self.tokens = MAX          # the first refill at a real time fills it

    def rate(self):
        return min((self.per_tick // 2 + self.per_tick * HZ) // self.scale, MAX)

    def contains(self, t):
        return t * self.scale <= MAX and t * self.scale <= self.tokens

    def remove_if(self, t):
        if self.contains(t):
            self.tokens -= t * self.scale
            return True
        return False

    def remove(self, t):
        f = t * self.scale
        self.tokens = self.tokens - f if f <= MAX and f <= self.tokens else 0

    def jiffies_until(self, t):
        f = t * self.scale
        if f <= self.tokens:
            return 0
        return (f - self.tokens - 1) // self.per_tick + 1


def unparse_real10(x, frac):
    one = 10 ** frac
    i, f = divmod(x, one)
    if f == 0:
        return str(i)
    return ("%d.%0*d" % (i, frac, f)).rstrip("0")


def unparse_bandwidth(x):
    if x >= 0x20000000:
        return unparse_real10(x, 6) + "MBps"
    if x >= 125000000:
        return unparse_real10((x * 8) & MAX, 9) + "Gbps"
    if x >= 125000:
        return unparse_real10(x * 8, 6) + "Mbps"
    return unparse_real10(x * 8, 3) + "kbps"


def burst_margin(b, need, least=500):
    """Jiffies of wall-clock time before a refused packet would have passed;
    the case is deterministic while the run is shorter than this."""
    j = b.jiffies_until(need)
    assert j >= least, "case depends on timing (%d ms margin)" % j
    return j


def time_to_fill(b):
    """Jiffies a bucket takes to fill from empty. Click's first refill
    compares this with its 32-bit millisecond clock (which wraps every 49.7
    days): the cases keep it far below any plausible clock value."""
    return (MAX - 1) // b.per_tick + 1
