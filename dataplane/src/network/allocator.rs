//! ClusterIP and NodePort allocation, as upstream's registry allocates them on
//! the create path: a user's choice is checked (in range, free), otherwise a
//! free value is picked from the range's upper band first (upstream keeps the
//! lower band for static choices), deterministically from the Service's name.
//!
//! What is allocated is read from the stored Services themselves (they are the
//! record, as upstream's repair loop treats them), plus a short-lived
//! reservation for values handed to a request that has not stored its Service
//! yet, so concurrent creates never get the same value.

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::ops::RangeInclusive;

use parking_lot::{Mutex, MutexGuard};
use serde_json::Value;
use thiserror::Error;

use super::cidr::Cidr;
use crate::store::Store;

/// The store resource Services live in.
const SERVICES: &str = "services";
/// Reservations older than this many allocations are forgotten (their request
/// failed or was a dry run).
const RESERVATION_LIFETIME: u64 = 256;

/// Why a value cannot be allocated; worded as upstream's allocators.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum AllocError {
    /// Someone has it.
    #[error("provided {0} is already allocated")]
    Allocated(&'static str),
    /// An IP outside the service CIDR.
    #[error("the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}")]
    IpNotInRange {
        /// The IP asked for.
        ip: String,
        /// The service CIDR.
        range: String,
    },
    /// A port outside the NodePort range.
    #[error("provided port is not in the valid range. The range of valid ports is {0}")]
    PortNotInRange(String),
    /// Nothing is left.
    #[error("range is full")]
    Full,
}

struct Held {
    seq: u64,
    owner: (String, String),
    ips: Vec<Ipv4Addr>,
    ports: Vec<u16>,
}

#[derive(Default)]
struct Reservations {
    seq: u64,
    held: Vec<Held>,
}

/// The allocator of one cluster.
pub struct Allocator {
    cidr: Cidr,
    node_ports: RangeInclusive<u16>,
    reservations: Mutex<Reservations>,
}

impl std::fmt::Debug for Allocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Allocator")
            .field("cidr", &self.cidr)
            .field("node_ports", &self.node_ports)
            .finish_non_exhaustive()
    }
}

/// Values a Service holds: its cluster IPs and node ports (incl. the health
/// check node port).
pub fn held_by(service: &Value) -> (Vec<Ipv4Addr>, Vec<u16>) {
    let spec = &service["spec"];
    let mut ips: Vec<Ipv4Addr> = spec["clusterIPs"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect())
        .unwrap_or_default();
    if let Some(ip) = spec["clusterIP"].as_str().and_then(|s| s.parse().ok())
        && !ips.contains(&ip)
    {
        ips.push(ip);
    }
    let mut ports: Vec<u16> = spec["ports"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| u16::try_from(p["nodePort"].as_u64()?).ok())
                .collect()
        })
        .unwrap_or_default();
    if let Some(p) = spec["healthCheckNodePort"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
    {
        ports.push(p);
    }
    (ips, ports)
}

/// Upstream's split of a range into a static (lower) and dynamic band.
fn band_offset(size: u32) -> u32 {
    const MIN: u32 = 16;
    const MAX: u32 = 256;
    if size < MIN {
        return 0;
    }
    (size / 16).clamp(MIN, MAX)
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Picks a free index in `0..size`: from a start derived from `seed` in the
/// upper band, then the lower band.
fn pick(size: u32, seed: u64, taken: impl Fn(u32) -> bool) -> Option<u32> {
    let offset = band_offset(size);
    let upper = size - offset;
    let start = (seed % u64::from(upper.max(1))) as u32;
    (0..upper)
        .map(|i| offset + (start + i) % upper)
        .chain(0..offset)
        .find(|i| !taken(*i))
}

impl Allocator {
    /// An allocator over `cidr` and `node_ports`.
    pub fn new(cidr: Cidr, node_ports: RangeInclusive<u16>) -> Self {
        Self {
            cidr,
            node_ports,
            reservations: Mutex::default(),
        }
    }

    /// The service CIDR.
    pub fn cidr(&self) -> Cidr {
        self.cidr
    }

    /// Starts allocating for the Service `namespace/name`: what every other
    /// Service holds is taken. The session holds the cluster's allocation lock
    /// until dropped, when what it handed out is reserved for the owner.
    pub fn session<'a>(&'a self, store: &dyn Store, namespace: &str, name: &str) -> Session<'a> {
        let mut res = self.reservations.lock();
        let owner = (namespace.to_owned(), name.to_owned());
        let mut ips = HashSet::new();
        let mut ports = HashSet::new();
        let snapshot = store.snapshot(SERVICES);
        for ((ns, n), svc) in snapshot.iter(None, None) {
            if (ns.as_str(), n.as_str()) == (namespace, name) {
                continue;
            }
            let (i, p) = held_by(&svc);
            ips.extend(i);
            ports.extend(p);
        }
        let seq = res.seq;
        res.held.retain(|h| {
            if h.owner == owner || h.seq + RESERVATION_LIFETIME < seq {
                return false;
            }
            // Stored now: the Service itself is the record.
            let stored = snapshot.objects.get(&h.owner).is_some_and(|svc| {
                let (i, p) = held_by(&svc.object());
                h.ips.iter().all(|x| i.contains(x)) && h.ports.iter().all(|x| p.contains(x))
            });
            !stored
        });
        for h in &res.held {
            ips.extend(h.ips.iter().copied());
            ports.extend(h.ports.iter().copied());
        }
        Session {
            alloc: self,
            guard: res,
            owner,
            taken_ips: ips,
            taken_ports: ports,
            new_ips: Vec::new(),
            new_ports: Vec::new(),
        }
    }
}

/// One request's allocations; see [`Allocator::session`].
pub struct Session<'a> {
    alloc: &'a Allocator,
    guard: MutexGuard<'a, Reservations>,
    owner: (String, String),
    taken_ips: HashSet<Ipv4Addr>,
    taken_ports: HashSet<u16>,
    new_ips: Vec<Ipv4Addr>,
    new_ports: Vec<u16>,
}

impl Session<'_> {
    fn seed(&self, what: &str) -> u64 {
        fnv(&format!("{}/{}/{what}", self.owner.0, self.owner.1))
    }

    /// Claims a cluster IP the user chose.
    pub fn claim_ip(&mut self, ip: &str) -> Result<Ipv4Addr, AllocError> {
        let cidr = self.alloc.cidr;
        let not_in_range = || AllocError::IpNotInRange {
            ip: ip.to_owned(),
            range: cidr.to_string(),
        };
        let addr: Ipv4Addr = ip.parse().map_err(|_| not_in_range())?;
        cidr.index_of(addr).ok_or_else(not_in_range)?;
        if !self.taken_ips.insert(addr) {
            return Err(AllocError::Allocated("IP"));
        }
        self.new_ips.push(addr);
        Ok(addr)
    }

    /// Allocates a free cluster IP.
    pub fn next_ip(&mut self) -> Result<Ipv4Addr, AllocError> {
        let cidr = self.alloc.cidr;
        let seed = self.seed("ip");
        let i = pick(cidr.usable(), seed, |i| {
            self.taken_ips.contains(&cidr.nth(i))
        })
        .ok_or(AllocError::Full)?;
        let addr = cidr.nth(i);
        self.taken_ips.insert(addr);
        self.new_ips.push(addr);
        Ok(addr)
    }

    /// Claims a node port the user chose.
    pub fn claim_port(&mut self, port: i64) -> Result<u16, AllocError> {
        let range = &self.alloc.node_ports;
        let p = u16::try_from(port)
            .ok()
            .filter(|p| range.contains(p))
            .ok_or_else(|| {
                AllocError::PortNotInRange(format!("{}-{}", range.start(), range.end()))
            })?;
        if !self.taken_ports.insert(p) {
            return Err(AllocError::Allocated("port"));
        }
        self.new_ports.push(p);
        Ok(p)
    }

    /// Allocates a free node port; `what` spreads the ports of one Service.
    pub fn next_port(&mut self, what: &str) -> Result<u16, AllocError> {
        let start = *self.alloc.node_ports.start();
        let size = u32::from(*self.alloc.node_ports.end() - start) + 1;
        let seed = self.seed(what);
        let i = pick(size, seed, |i| {
            self.taken_ports.contains(&(start + i as u16))
        })
        .ok_or(AllocError::Full)?;
        let p = start + i as u16;
        self.taken_ports.insert(p);
        self.new_ports.push(p);
        Ok(p)
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if self.new_ips.is_empty() && self.new_ports.is_empty() {
            return;
        }
        self.guard.seq += 1;
        let seq = self.guard.seq;
        let held = Held {
            seq,
            owner: std::mem::take(&mut self.owner),
            ips: std::mem::take(&mut self.new_ips),
            ports: std::mem::take(&mut self.new_ports),
        };
        self.guard.held.push(held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{MemoryStore, ObjectKey, StoreLimits};
    use serde_json::json;

    fn store() -> MemoryStore {
        MemoryStore::new(kemu_shared::FakeClock::at_epoch(), StoreLimits::default())
    }

    #[test]
    fn dynamic_ips_come_from_the_upper_band_and_never_repeat() {
        let a = Allocator::new(Cidr::parse("10.0.0.0/24").unwrap(), 30000..=32767);
        let s = store();
        let first = a.session(&s, "default", "web").next_ip().unwrap();
        let second = a.session(&s, "default", "api").next_ip().unwrap();
        assert_ne!(first, second);
        // /24: 254 usable, band offset 16: dynamic from .17 up.
        assert!(first.octets()[3] >= 17, "{first}");
        // The same owner asking again replaces its reservation.
        assert_eq!(a.session(&s, "default", "web").next_ip().unwrap(), first);
    }

    #[test]
    fn stored_values_are_taken_and_static_choices_checked() {
        let a = Allocator::new(Cidr::parse("10.0.0.0/16").unwrap(), 30000..=32767);
        let s = store();
        s.create(
            &ObjectKey::new("services", "default", "dns"),
            json!({"metadata": {"name": "dns", "namespace": "default"},
                   "spec": {"clusterIP": "10.0.0.10", "clusterIPs": ["10.0.0.10"], "ports": [{"port": 53, "nodePort": 30053}]}}),
        )
        .unwrap();
        let mut sess = a.session(&s, "default", "other");
        assert_eq!(sess.claim_ip("10.0.0.10"), Err(AllocError::Allocated("IP")));
        assert_eq!(sess.claim_port(30053), Err(AllocError::Allocated("port")));
        assert_eq!(
            sess.claim_port(80).unwrap_err().to_string(),
            "provided port is not in the valid range. The range of valid ports is 30000-32767"
        );
        assert_eq!(
            sess.claim_ip("1.2.3.4").unwrap_err().to_string(),
            "the provided IP (1.2.3.4) is not in the valid range. The range of valid IPs is 10.0.0.0/16"
        );
        assert!(sess.claim_ip("10.0.0.11").is_ok());
        let p = sess.next_port("0").unwrap();
        assert!((30000 + 173..=32767).contains(&p), "{p}");
        drop(sess);
        // The Service itself may keep what it holds.
        let mut own = a.session(&s, "default", "dns");
        assert!(own.claim_ip("10.0.0.10").is_ok());
        // Another request cannot take what "other" was handed.
        drop(own);
        assert_eq!(
            a.session(&s, "x", "y").claim_ip("10.0.0.11"),
            Err(AllocError::Allocated("IP"))
        );
    }
}
