//! IPv4 CIDR blocks: parsing, membership and the n-th usable address.

use std::fmt;
use std::net::Ipv4Addr;

/// An IPv4 CIDR block, e.g. `10.100.0.0/16`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    base: u32,
    prefix: u8,
}

impl Cidr {
    /// A block from its base address and prefix length (at most 30).
    pub const fn new(base: [u8; 4], prefix: u8) -> Self {
        Self {
            base: u32::from_be_bytes(base),
            prefix,
        }
    }

    /// Parses `a.b.c.d/n`; the host bits are cleared.
    pub fn parse(s: &str) -> Option<Self> {
        let (ip, prefix) = s.trim().split_once('/')?;
        let ip: Ipv4Addr = ip.parse().ok()?;
        let prefix: u8 = prefix.parse().ok()?;
        if prefix > 30 {
            return None;
        }
        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
        Some(Self {
            base: u32::from(ip) & mask,
            prefix,
        })
    }

    /// Usable addresses: all but the network and broadcast address, as
    /// upstream's allocator counts them.
    pub fn usable(&self) -> u32 {
        (1u32 << (32 - u32::from(self.prefix))) - 2
    }

    /// The `i`-th usable address (0 is the first after the network address).
    pub fn nth(&self, i: u32) -> Ipv4Addr {
        Ipv4Addr::from(self.base + 1 + i)
    }

    /// The index of `ip` among the usable addresses, if it is one.
    pub fn index_of(&self, ip: Ipv4Addr) -> Option<u32> {
        let v = u32::from(ip);
        (v > self.base && v - self.base - 1 < self.usable()).then(|| v - self.base - 1)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.base), self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usable_addresses_skip_network_and_broadcast() {
        let c = Cidr::parse("10.100.0.0/16").unwrap();
        assert_eq!(c.usable(), 65534);
        assert_eq!(c.nth(0), Ipv4Addr::new(10, 100, 0, 1));
        assert_eq!(c.index_of(Ipv4Addr::new(10, 100, 0, 10)), Some(9));
        assert_eq!(c.index_of(Ipv4Addr::new(10, 100, 0, 0)), None);
        assert_eq!(c.index_of(Ipv4Addr::new(10, 100, 255, 255)), None);
        assert_eq!(c.index_of(Ipv4Addr::new(10, 101, 0, 1)), None);
        assert_eq!(
            Cidr::parse("34.118.224.0/20").unwrap().to_string(),
            "34.118.224.0/20"
        );
    }
}
