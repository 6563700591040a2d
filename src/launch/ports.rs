//! The kernel's five ports and the launcher's communication port, inside the gateway's range.
//!
//! As the gateway's launchers do (gateway_provisioners' `server_listener.py`): a range of
//! `0..0` (or none) lets the system pick; otherwise each port is a random one in the range,
//! retried `MAX_PORT_RANGE_RETRIES` times (default 5) when taken, and a range smaller than
//! `MIN_PORT_RANGE_SIZE` ports (default 1000; the gateway passes its own setting as
//! `EG_MIN_PORT_RANGE_SIZE`) is refused, since random picks in a small range collide.
//! The five kernel sockets are closed again before the kernel binds them (a port another
//! process takes in between makes the kernel's bind fail, the race every launcher has); the
//! communication port's listener is kept and handed to the listener thread.

use anyhow::{Context, Result, bail};
use rand::Rng;
use std::net::{IpAddr, TcpListener};

/// `<lower>..<upper>`, or any port when both are 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PortRange {
    pub(crate) lower: u16,
    pub(crate) upper: u16,
}

impl PortRange {
    const ANY: PortRange = PortRange { lower: 0, upper: 0 };

    /// Parses the gateway's `--port-range`, refusing ranges the launchers refuse.
    pub(crate) fn parse(text: Option<&str>) -> Result<PortRange> {
        let Some(text) = text else {
            return Ok(PortRange::ANY);
        };
        let parse = |part: Option<&str>| -> Result<u16> {
            let part = part.context("no `..` between the two ports")?;
            part.trim()
                .parse()
                .with_context(|| format!("{part:?} is not a port number"))
        };
        let mut parts = text.split("..");
        let range = (|| {
            let range = PortRange {
                lower: parse(parts.next())?,
                upper: parse(parts.next())?,
            };
            if range.upper < range.lower {
                bail!("the upper port is below the lower one");
            }
            let minimum = env_number(&["EG_MIN_PORT_RANGE_SIZE", "MIN_PORT_RANGE_SIZE"], 1000);
            let size = u32::from(range.upper - range.lower);
            if size != 0 && size < minimum {
                bail!(
                    "the range holds {size} ports, fewer than {minimum} (MIN_PORT_RANGE_SIZE); \
                     widen the gateway's port range"
                );
            }
            Ok(range)
        })();
        range.with_context(|| format!("--port-range {text:?} (expected <lower>..<upper>)"))
    }

    fn candidate(&self, rng: &mut impl Rng) -> u16 {
        if self.upper == self.lower {
            0
        } else {
            rng.gen_range(self.lower..=self.upper)
        }
    }
}

/// The kernel's five ports (shell, iopub, stdin, hb, control) and the bound listener of the
/// communication port, all distinct, on `ip`.
pub(crate) struct Ports {
    pub(crate) kernel: [u16; 5],
    pub(crate) comm: TcpListener,
}

pub(crate) fn select(range: PortRange, ip: IpAddr) -> Result<Ports> {
    let retries = env_number(&["EG_MAX_PORT_RANGE_RETRIES", "MAX_PORT_RANGE_RETRIES"], 5);
    let mut rng = rand::thread_rng();
    // All six are held until the last is chosen, so no two picks are the same port.
    let mut held = Vec::with_capacity(6);
    for _ in 0..6 {
        held.push(bind_in(range, ip, retries, &mut rng)?);
    }
    let comm = held.pop().expect("six sockets");
    let mut kernel = [0u16; 5];
    for (port, socket) in kernel.iter_mut().zip(&held) {
        *port = socket.local_addr()?.port();
    }
    Ok(Ports { kernel, comm })
}

fn bind_in(range: PortRange, ip: IpAddr, retries: u32, rng: &mut impl Rng) -> Result<TcpListener> {
    let mut last_error = None;
    for _ in 0..=retries {
        match TcpListener::bind((ip, range.candidate(rng))) {
            Ok(listener) => return Ok(listener),
            Err(error) => last_error = Some(error),
        }
    }
    let error = last_error.expect("at least one try");
    bail!(
        "no free port on {ip} within {}..{} after {retries} retries (last: {error}); widen \
         the gateway's port range or free ports in it",
        range.lower,
        range.upper
    )
}

/// The first of `names` set to a number, else `default`.
fn env_number(names: &[&str], default: u32) -> u32 {
    names
        .iter()
        .find_map(|name| std::env::var(name).ok()?.trim().parse().ok())
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn port_range_is_parsed_and_small_ranges_are_refused() {
        assert_eq!(PortRange::parse(None).unwrap(), PortRange::ANY);
        assert_eq!(PortRange::parse(Some("0..0")).unwrap(), PortRange::ANY);
        assert_eq!(
            PortRange::parse(Some("40000..41000")).unwrap(),
            PortRange {
                lower: 40000,
                upper: 41000
            }
        );
        for bad in ["40000..40010", "41000..40000", "40000", "a..b"] {
            let error = PortRange::parse(Some(bad)).unwrap_err();
            assert!(format!("{error:#}").contains("--port-range"), "{error:#}");
        }
    }

    #[test]
    fn six_distinct_ports_inside_the_range() {
        let range = PortRange::parse(Some("45000..46500")).unwrap();
        let ports = select(range, IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap();
        let mut all = ports.kernel.to_vec();
        all.push(ports.comm.local_addr().unwrap().port());
        assert!(all.iter().all(|p| (45000..=46500).contains(p)), "{all:?}");
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 6);
    }
}
