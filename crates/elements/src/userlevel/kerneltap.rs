//! `KernelTap`: `KernelTun` over a TAP device (Ethernet frames both ways).

use super::kerneltun::{configure_kind, KERNELTUN_KEYWORDS};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Click's `KernelTap`: a `KernelTun` whose `TAP` defaults to true.
pub struct KernelTap;

impl KernelTap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("KernelTap")
        .ports("0-1/1-2")
        .processing("a/h")
        .flow("x/y")
        .keywords(KERNELTUN_KEYWORDS)
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "KernelTap(ADDR/MASK [, GATEWAY, KEYWORDS])\n\n\
             Creates a Linux TAP device: a virtual Ethernet interface. The\n\
             Ethernet frames the host sends on it are pushed out of output 0;\n\
             the frames arriving on the input (each starting with an Ethernet\n\
             header) are written into it, and the host receives them as arriving\n\
             on the interface. KernelTap is KernelTun with TAP true, and takes\n\
             the same arguments. Output 1 gets nothing.\n\n\
             The host sends ARP queries into the device: answer them (for\n\
             instance Classifier(12/0806, 12/0800) with ARPResponder(0.0.0.0/0\n\
             1:1:1:1:1:1) on the ARP output, back into the KernelTap) to get IP\n\
             packets. Frames for the host must carry the device's Ethernet\n\
             address (ETHER; default: the kernel's choice, see `ip link') as\n\
             their destination, or broadcast.\n\n\
             The device is created with /dev/net/tun (IFF_TAP | IFF_NO_PI)\n\
             under the name DEVNAME (default: the kernel picks tapN; `dev_name'\n\
             says which); it gets ADDR and MASK as the host's address and\n\
             netmask; it is brought up; and a nonzero GATEWAY (on ADDR/MASK's\n\
             network) becomes the host's default route. The device is not\n\
             persistent: it disappears when pronto exits. Creating it needs\n\
             CAP_NET_ADMIN. A pull input is pulled by the element's task, BURST\n\
             packets at most per run; BURST frames at most are read per run,\n\
             stamped with the current time, link header marked.\n\n\
             Differences from Click: as KernelTun's (ioctls, not ifconfig/route;\n\
             HEADROOM checked only; MTU at most 1906; each kind of refused frame\n\
             (shorter than 14 bytes, longer than MTU plus the Ethernet header)\n\
             reported once; refusals, refused writes and frames dropped on the\n\
             way in counted in `drops'; no task handlers).\n\n\
             Ports: 0 or 1 input (push or pull); 1 or 2 push outputs.\n\
             Arguments:\n  \
             ADDR/MASK  IPv4 prefix: the host's address and netmask on the device\n  \
             GATEWAY    IPv4 address on ADDR/MASK's network: default route via it\n\
             Keywords:\n  \
             DEVNAME    the device's name (at most 15 bytes; DEV_NAME is the old name)\n  \
             ETHER      the device's Ethernet address (default: the kernel's choice)\n  \
             MTU        the device's MTU without the Ethernet header, 20-1906\n             \
             (default 1500)\n  \
             TAP        boolean (default true; false makes it a KernelTun)\n  \
             HEADROOM   bytes, at most 128 (accepted; packets have 128)\n  \
             BURST      frames read (and pulled) per task run, at least 1 (default 1)\n  \
             IGNORE_QUEUE_OVERFLOWS  boolean: report ENOBUFS only once (default false)\n\
             Handlers:\n  \
             dev_name (read), packets (read: frames read from the device),\n  \
             selected_calls (read: task runs that found the device readable),\n  \
             drops (read; pronto's)",
        );

    /// Configures a `KernelTap`: a TAP device unless `TAP false`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        configure_kind(ctx, "KernelTap", true)
    }
}
