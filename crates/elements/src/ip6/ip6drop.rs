//! `IP6Drop` (FastClick): drops packets by a Gilbert-Elliott loss model, a
//! uniform loss rate, or a deterministic pattern.

use pronto_packet::Batch;

use crate::random::ClickRandom;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip6, Out,
    Spec,
};

/// How packets are chosen for dropping.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Model {
    /// Two states: in the good one a packet is kept with probability K and
    /// the state turns bad with probability P; in the bad one a packet is
    /// kept with probability H and the state turns good with probability R.
    GilbertElliott { p: f64, r: f64, h: f64, k: f64 },
    /// Each packet dropped with probability UDROPRATE.
    Uniform(f64),
    /// Of every 100 packets, the first UDROPRATE * 100 (counting from 1,
    /// modulo 100) are dropped.
    Deterministic(f64),
}

/// Drops packets following a loss model.
pub struct IP6Drop {
    model: Model,
    rng: ClickRandom,
    bad: bool,
    seen: u64,
    count: u64,
    drops: u64,
}

impl IP6Drop {
    /// FastClick's description of the class.
    pub const SPEC: Spec = Spec::new("IP6Drop")
        .ports("1/1")
        .processing("a/a")
        .keywords(&[
            "ADDR",
            "P",
            "R",
            "H",
            "K",
            "UNIFORM",
            "UDROPRATE",
            "DETERMINISTIC",
            "SEED",
        ])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "IP6Drop([keywords ADDR, P, R, H, K, UNIFORM, UDROPRATE, DETERMINISTIC, SEED])\n\n\
             FastClick's loss emulator. By default it follows the Gilbert-Elliott model:\n\
             in the good state each packet is kept with probability K and the state\n\
             turns bad with probability P; in the bad state a packet is kept with\n\
             probability H and the state turns good with probability R (two draws per\n\
             packet, from glibc's random() seeded with SEED, as FastClick's rand()).\n\
             With UNIFORM true each packet is dropped with probability UDROPRATE. With\n\
             DETERMINISTIC true the packets numbered n = 1, 2, ... are dropped when\n\
             n mod 100 < UDROPRATE * 100 (UDROPRATE then 0 or at least 0.01). The model\n\
             is printed on standard error at configuration, and the number of drops\n\
             when the router stops. Packets are not read: ADDR (IPv6 addresses,\n\
             repeatable) is accepted and ignored, as in FastClick.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  \
             P, R, H, K     probabilities (default 0, 0, 0, 1)\n  \
             UNIFORM        boolean (default false)\n  \
             UDROPRATE      drop rate of the uniform and deterministic models\n                 \
             (default 0.03)\n  \
             DETERMINISTIC  boolean (default false)\n  \
             SEED           seed of the generator, 0 to 65535 (default 51)\n\
             Handlers:\n  drops (read)        packets dropped\n  \
             count (read)        packets seen\n  \
             drop_source (read)  always 0 (FastClick's unused counter)",
        );

    /// Configures an `IP6Drop`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let _addrs: Vec<Ip6> = a.read_all("ADDR")?;
        let p = a.read_or("P", 0.0f64)?;
        let r = a.read_or("R", 0.0f64)?;
        let h = a.read_or("H", 0.0f64)?;
        let k = a.read_or("K", 1.0f64)?;
        let uniform = a.read_or("UNIFORM", false)?;
        let rate = a.read_or("UDROPRATE", 0.03f64)?;
        let deterministic = a.read_or("DETERMINISTIC", false)?;
        let seed = a.read_or("SEED", 51u16)?;
        a.finish()?;
        let model = if deterministic {
            eprintln!("Uses determistic losses with {rate:.6} burst losses");
            if rate > 0.0 && rate < 0.01 {
                return Err(ConfigError::new(
                    "UDROPRATE: the deterministic model drops whole packets per hundred; use 0 or at least 0.01",
                ));
            }
            Model::Deterministic(rate)
        } else if uniform {
            eprintln!("Uses uniformis_uniform drop with {rate:.6}");
            Model::Uniform(rate)
        } else {
            eprintln!("Uses GE model with k={k:.4} h={h:.4} r={r:.4} p={p:.4}");
            Model::GilbertElliott { p, r, h, k }
        };
        Ok(Box::new(IP6Drop {
            model,
            rng: ClickRandom::new(u32::from(seed)),
            bad: false,
            seen: 0,
            count: 0,
            drops: 0,
        }))
    }

    /// A draw in [0, 1), as `rand() / (RAND_MAX + 1.)`.
    fn draw(&mut self) -> f64 {
        f64::from(self.rng.next_u31()) / 2_147_483_648.0
    }

    /// True if the next packet is kept.
    fn keep(&mut self) -> bool {
        match self.model {
            Model::Deterministic(rate) => {
                self.seen += 1;
                ((self.seen % 100) as f64) >= rate * 100.0
            }
            Model::Uniform(rate) => self.draw() > rate,
            Model::GilbertElliott { p, r, h, k } => {
                let (keep_p, turn_p) = if self.bad { (h, r) } else { (k, p) };
                let keep = self.draw() < keep_p;
                if self.draw() < turn_p {
                    self.bad = !self.bad;
                }
                keep
            }
        }
    }
}

impl Element for IP6Drop {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |_, _| {
            self.count += 1;
            if self.keep() {
                Some(0)
            } else {
                self.drops += 1;
                None
            }
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("simulated_loss", self.drops);
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("drops"),
            HandlerInfo::read("count"),
            HandlerInfo::read("drop_source"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            "count" => Ok(self.count.to_string()),
            "drop_source" => Ok("0".into()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        eprintln!("Total number of dropped packets: {}", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::{Packet, Pool};

    const KW: &[&str] = IP6Drop::SPEC.keywords;

    /// Which of `n` packets (numbered from 0) pass.
    fn kept(config: &str, n: u8) -> (Vec<u8>, Box<dyn Element>) {
        let pool = Pool::new(256).expect("pool");
        let mut e = configure(KW, IP6Drop::configure, config, 1, 1).expect("configures");
        let ps: Vec<Packet> = (0..n).map(|i| pkt(&pool, &[i])).collect();
        let outs = push(e.as_mut(), &pool, ps, 1);
        (outs[0].iter().map(|p| p.data()[0]).collect(), e)
    }

    #[test]
    fn deterministic_pattern() {
        let (k, e) = kept("DETERMINISTIC true, UDROPRATE 0.03", 205);
        // Packets 1, 2 (n mod 100 = 1, 2), 100, 101, 102, 200, 201, 202 go
        // (numbered from 1: indices 0, 1, 99, 100, 101, 199, 200, 201).
        let dropped: Vec<u8> = (0..205u8).filter(|i| !k.contains(i)).collect();
        assert_eq!(dropped, vec![0, 1, 99, 100, 101, 199, 200, 201]);
        assert_eq!(read(e.as_ref(), "drops"), "8");
        assert_eq!(read(e.as_ref(), "count"), "205");
    }

    #[test]
    fn gilbert_elliott_draws_glibc_numbers() {
        // srandom(51); the draws decide in pairs (keep, turn). With P 1 the
        // state turns bad after the first packet and, with R 0 and H 0,
        // every later packet is dropped.
        let (k, e) = kept("P 1, R 0, H 0, K 1", 5);
        assert_eq!(k, vec![0]);
        assert_eq!(read(e.as_ref(), "drops"), "4");
        // The default (K 1, P 0) keeps everything.
        let (k, _) = kept("ADDR 2001:db8::1, ADDR fc00::9", 5);
        assert_eq!(k, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn uniform_model_follows_glibc_rand() {
        // glibc after srand(51): rand() = 1633333913, 104700532, 1964138127,
        // 1729533353, 244803578, 1584215234, 1906743983, 44582672,
        // 110172946, 1695187844 (0.76, 0.05, 0.91, 0.81, 0.11, 0.74, 0.89,
        // 0.02, 0.05, 0.79 of 2^31): kept when above UDROPRATE.
        let (k, e) = kept("UNIFORM true, UDROPRATE 0.5", 10);
        assert_eq!(k, vec![0, 2, 3, 5, 6, 9]);
        assert_eq!(read(e.as_ref(), "drops"), "4");
        // Gilbert-Elliott takes them in pairs (keep, turn): K 0.8, P 0.5:
        // packet 0 kept (0.76), turns bad (0.05); bad with H 0.95: packet
        // 1 kept (0.91), R 0.85: turns good (0.81); packet 2
        // good: 0.11 kept, 0.74 stays good; packet 3: 0.89 dropped, 0.02
        // turns bad; packet 4 bad: 0.05 kept, 0.79 turns good.
        let (k, e) = kept("K 0.8, P 0.5, H 0.95, R 0.85", 5);
        assert_eq!(k, vec![0, 1, 2, 4]);
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }

    #[test]
    fn configuration_errors() {
        let err = |c: &str| config_err(configure(KW, IP6Drop::configure, c, 1, 1));
        assert!(err("DETERMINISTIC true, UDROPRATE 0.005").contains("UDROPRATE"));
        assert!(err("ADDR 1.2.3.4").contains("ADDR"));
        assert!(err("SEED 70000").contains("SEED"));
    }
}
