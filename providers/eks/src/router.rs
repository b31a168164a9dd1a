//! Which EKS operation a request is: one variant per operation.

use actix_web::http::Method;

use crate::error::Error;

/// List of the EKS operations the facade serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `GET /clusters/{name}`
    DescribeCluster {
        /// Cluster name.
        name: String,
    },
    /// `GET /clusters`
    ListClusters,
}

impl Endpoint {
    /// Parses method and path into an operation.
    pub fn parse(method: &Method, path: &str) -> Result<Self, Error> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        match (method.as_str(), segments.as_slice()) {
            ("GET", ["clusters"]) => Ok(Endpoint::ListClusters),
            ("GET", ["clusters", name]) => Ok(Endpoint::DescribeCluster {
                name: (*name).to_owned(),
            }),
            _ => Err(Error::UnknownOperation(format!("{method} {path}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_paths_are_errors_not_panics() {
        for path in ["", "/", "//", "/clusters/a/b/c/d", "/nope"] {
            assert!(Endpoint::parse(&Method::GET, path).is_err(), "{path}");
        }
        assert_eq!(
            Endpoint::parse(&Method::GET, "/clusters/demo").unwrap(),
            Endpoint::DescribeCluster {
                name: "demo".into()
            }
        );
    }
}
