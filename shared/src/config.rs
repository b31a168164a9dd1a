//! Addresses and switches chosen at start-up, shared by every part.

/// Start-up configuration shared by the facades and the data plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The host put in cluster endpoints and certificate SANs.
    pub advertise_host: String,
    /// The address cluster listeners bind to.
    pub bind_host: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            advertise_host: "127.0.0.1".into(),
            bind_host: "127.0.0.1".into(),
        }
    }
}

impl Config {
    /// The names a serving certificate must cover: loopback in both spellings
    /// and the advertise host.
    pub fn serving_hosts(&self) -> Vec<String> {
        let mut hosts = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
        for h in [&self.advertise_host, &self.bind_host] {
            if !hosts.contains(h) && h != "0.0.0.0" && h != "::" {
                hosts.push(h.clone());
            }
        }
        hosts
    }
}
