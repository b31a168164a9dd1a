//! Certificates: one CA per cluster (made with rcgen and kept with the record),
//! serving certificates for its listener and client certificates for its users.
//!
//! Client certificates are assembled here rather than by rcgen because
//! Kubernetes reads every `O=` of the subject as a group, and rcgen keeps at
//! most one value per attribute type.

use std::sync::Arc;

use chrono::{DateTime, Datelike, Timelike, Utc};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData, SigningKey,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

use crate::error::PkiError;

/// A certificate and its private key, both PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertAndKey {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PKCS#8 PEM.
    pub key_pem: String,
}

/// A cluster's key material as it is persisted (state directory, snapshots):
/// plain PEM strings. New per-cluster keys go here as `#[serde(default)]`
/// fields, so older state files still load.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterKeys {
    /// The CA certificate, PEM.
    pub ca_cert_pem: String,
    /// The CA private key, PKCS#8 PEM.
    pub ca_key_pem: String,
}

/// A certificate authority: one per cluster, and one for kemu's own HTTPS facades.
/// Serialized as its [`ClusterKeys`].
#[derive(Clone, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "ClusterKeys", into = "ClusterKeys")]
pub struct ClusterCa {
    inner: Arc<CaInner>,
}

struct CaInner {
    cert_pem: String,
    key_pem: String,
    issuer: Issuer<'static, KeyPair>,
    /// The CA's subject exactly as encoded, reused as the issuer of what it signs.
    subject_der: Vec<u8>,
}

impl std::fmt::Debug for ClusterCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterCa").finish_non_exhaustive()
    }
}

impl PartialEq for ClusterCa {
    fn eq(&self, other: &Self) -> bool {
        self.inner.cert_pem == other.inner.cert_pem
    }
}

const VALID_YEARS: i32 = 10;

impl From<ClusterCa> for ClusterKeys {
    fn from(ca: ClusterCa) -> Self {
        ca.keys()
    }
}

impl TryFrom<ClusterKeys> for ClusterCa {
    type Error = PkiError;

    fn try_from(keys: ClusterKeys) -> Result<Self, PkiError> {
        Self::from_keys(&keys)
    }
}

impl ClusterCa {
    /// A new CA whose subject is `CN=<common_name>`, valid for ten years from `now`.
    pub fn generate(common_name: &str, now: DateTime<Utc>) -> Result<Self, PkiError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        params.distinguished_name = dn(common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        set_validity(&mut params, now);
        let cert = params.self_signed(&key)?;
        Self::from_pem(&cert.pem(), &key.serialize_pem())
    }

    /// A CA loaded from its certificate and key (both PEM), e.g. after a restart.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, PkiError> {
        let key = KeyPair::from_pem(key_pem)?;
        let der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| PkiError::Parse(e.to_string()))?;
        let (_, parsed) = x509_parser::parse_x509_certificate(&der)
            .map_err(|e| PkiError::Parse(e.to_string()))?;
        let subject_der = parsed.tbs_certificate.subject.as_raw().to_vec();
        let issuer = Issuer::from_ca_cert_der(&der, key)?;
        Ok(Self {
            inner: Arc::new(CaInner {
                cert_pem: cert_pem.to_owned(),
                key_pem: key_pem.to_owned(),
                issuer,
                subject_der,
            }),
        })
    }

    /// The key material to persist.
    pub fn keys(&self) -> ClusterKeys {
        ClusterKeys {
            ca_cert_pem: self.inner.cert_pem.clone(),
            ca_key_pem: self.inner.key_pem.clone(),
        }
    }

    /// The CA persisted as `keys`.
    pub fn from_keys(keys: &ClusterKeys) -> Result<Self, PkiError> {
        Self::from_pem(&keys.ca_cert_pem, &keys.ca_key_pem)
    }

    /// The CA certificate, PEM: what a kubeconfig's `certificate-authority-data` holds.
    pub fn cert_pem(&self) -> &str {
        &self.inner.cert_pem
    }

    /// The CA private key, PEM (persisted so a restart keeps the CA).
    pub fn key_pem(&self) -> &str {
        &self.inner.key_pem
    }

    /// A serving certificate for `hosts` (names or IP addresses, all put in the
    /// SAN), valid as long as the CA.
    pub fn serving_cert(
        &self,
        hosts: &[String],
        now: DateTime<Utc>,
    ) -> Result<CertAndKey, PkiError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(hosts.to_vec())?;
        params.distinguished_name = dn(hosts.first().map_or("kemu", String::as_str));
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        set_validity(&mut params, now);
        let cert = params.signed_by(&key, &self.inner.issuer)?;
        Ok(CertAndKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A client certificate for `user` in `groups`: `CN=user`, one `O=` per group,
    /// as the Kubernetes x509 authenticator reads it.
    pub fn client_cert(
        &self,
        user: &str,
        groups: &[String],
        now: DateTime<Utc>,
    ) -> Result<CertAndKey, PkiError> {
        let key = KeyPair::generate()?;
        let serial: [u8; 16] = *uuid::Uuid::new_v4().as_bytes();
        let not_after = now.with_year(now.year() + VALID_YEARS).unwrap_or(now);
        let sig_alg = ecdsa_sha256_alg_id();
        let tbs = yasna::construct_der(|w| {
            w.write_sequence(|w| {
                w.next()
                    .write_tagged(yasna::Tag::context(0), |w| w.write_u8(2));
                // A positive INTEGER: clear the top bit.
                let mut serial = serial;
                serial[0] &= 0x7f;
                w.next().write_bigint_bytes(&serial, true);
                w.next().write_der(&sig_alg);
                w.next().write_der(&self.inner.subject_der);
                w.next().write_sequence(|w| {
                    w.next()
                        .write_der(&utc_time(now - chrono::Duration::minutes(5)));
                    w.next().write_der(&utc_time(not_after));
                });
                w.next().write_sequence(|w| {
                    w.next().write_set(|w| attr(w.next(), &[2, 5, 4, 3], user));
                    for group in groups {
                        w.next()
                            .write_set(|w| attr(w.next(), &[2, 5, 4, 10], group));
                    }
                });
                w.next().write_der(&key.subject_public_key_info());
                w.next().write_tagged(yasna::Tag::context(3), |w| {
                    w.write_sequence(|w| {
                        // keyUsage: digitalSignature + keyEncipherment, critical.
                        extension(w.next(), &[2, 5, 29, 15], true, &[0x03, 0x02, 0x05, 0xa0]);
                        // extKeyUsage: clientAuth.
                        let eku = yasna::construct_der(|w| {
                            w.write_sequence(|w| {
                                w.next()
                                    .write_oid(&yasna::models::ObjectIdentifier::from_slice(&[
                                        1, 3, 6, 1, 5, 5, 7, 3, 2,
                                    ]))
                            })
                        });
                        extension(w.next(), &[2, 5, 29, 37], false, &eku);
                        // basicConstraints: not a CA, critical.
                        extension(w.next(), &[2, 5, 29, 19], true, &[0x30, 0x00]);
                    })
                });
            })
        });
        let signature = self.inner.issuer.key().sign(&tbs)?;
        let der = yasna::construct_der(|w| {
            w.write_sequence(|w| {
                w.next().write_der(&tbs);
                w.next().write_der(&sig_alg);
                w.next().write_bitvec_bytes(&signature, signature.len() * 8);
            })
        });
        Ok(CertAndKey {
            cert_pem: pem_encode("CERTIFICATE", &der),
            key_pem: key.serialize_pem(),
        })
    }

    /// A rustls server configuration presenting `serving`. With `client_auth`,
    /// it asks (not requires) clients for a certificate signed by this CA.
    pub fn rustls_server_config(
        &self,
        serving: &CertAndKey,
        client_auth: bool,
    ) -> Result<rustls::ServerConfig, PkiError> {
        let chain = CertificateDer::pem_slice_iter(serving.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| PkiError::Parse(e.to_string()))?;
        let key = PrivateKeyDer::from_pem_slice(serving.key_pem.as_bytes())
            .map_err(|e| PkiError::Parse(e.to_string()))?;
        if !client_auth {
            return rustls::ServerConfig::builder()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .map_err(|e| PkiError::Tls(e.to_string()));
        }
        let verifier = RequestClientCert(self.client_verifier()?);
        rustls::ServerConfig::builder()
            .with_client_cert_verifier(Arc::new(verifier))
            .with_single_cert(chain, key)
            .map_err(|e| PkiError::Tls(e.to_string()))
    }

    /// Whether `der` is a client certificate this CA signed, valid at `now`
    /// (what the x509 authenticator checks before it reads CN and O).
    pub fn verifies_client_cert(&self, der: &[u8], now: DateTime<Utc>) -> bool {
        let Ok(verifier) = self.client_verifier() else {
            return false;
        };
        let Ok(secs) = u64::try_from(now.timestamp()) else {
            return false;
        };
        let at = rustls_pki_types::UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs));
        verifier
            .verify_client_cert(&CertificateDer::from(der.to_vec()), &[], at)
            .is_ok()
    }

    fn client_verifier(
        &self,
    ) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, PkiError> {
        let mut roots = rustls::RootCertStore::empty();
        for ca in CertificateDer::pem_slice_iter(self.cert_pem().as_bytes()) {
            roots
                .add(ca.map_err(|e| PkiError::Parse(e.to_string()))?)
                .map_err(|e| PkiError::Tls(e.to_string()))?;
        }
        rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
            .allow_unauthenticated()
            .build()
            .map_err(|e| PkiError::Tls(e.to_string()))
    }
}

/// Asks for a client certificate signed by the CA and takes any at the TLS
/// layer, as kube-apiserver does: the handshake signature is still checked
/// (the client holds the key), but the chain is left to the authenticator
/// ([`ClusterCa::verifies_client_cert`]), so a certificate from another CA
/// gets a 401 instead of a failed handshake.
#[derive(Debug)]
struct RequestClientCert(Arc<dyn rustls::server::danger::ClientCertVerifier>);

impl rustls::server::danger::ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        unusable_or(cert, || self.0.verify_tls12_signature(message, cert, dss))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        unusable_or(cert, || self.0.verify_tls13_signature(message, cert, dss))
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The handshake signature's check, except for a certificate webpki cannot
/// read at all (an X.509 v1 certificate, without extensions): kube-apiserver
/// completes the handshake and its x509 authenticator answers 401, so kemu
/// lets the handshake finish too. That is safe because such a certificate
/// can never authenticate: [`ClusterCa::verifies_client_cert`] reads it with
/// the same webpki and refuses it, so the request is a 401.
fn unusable_or(
    cert: &CertificateDer<'_>,
    verify: impl FnOnce() -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error>,
) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
    match verify() {
        Err(_) if webpki::EndEntityCert::try_from(cert).is_err() => {
            Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
        }
        other => other,
    }
}

/// Installs the ring crypto provider as the process default; harmless if one is
/// already installed.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The user and groups a client certificate names, as Kubernetes reads them.
pub fn certificate_identity(der: &[u8]) -> Option<(String, Vec<String>)> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let user = subject.iter_common_name().next()?.as_str().ok()?.to_owned();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_owned))
        .collect();
    Some((user, groups))
}

fn dn(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn
}

fn set_validity(params: &mut CertificateParams, now: DateTime<Utc>) {
    let start = rcgen::date_time_ymd(now.year(), now.month() as u8, now.day() as u8);
    params.not_before = start - time::Duration::days(1);
    params.not_after = rcgen::date_time_ymd(now.year() + VALID_YEARS, now.month() as u8, 1);
}

fn ecdsa_sha256_alg_id() -> Vec<u8> {
    yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next()
                .write_oid(&yasna::models::ObjectIdentifier::from_slice(&[
                    1, 2, 840, 10045, 4, 3, 2,
                ]))
        })
    })
}

fn attr(w: yasna::DERWriter<'_>, oid: &[u64], value: &str) {
    w.write_sequence(|w| {
        w.next()
            .write_oid(&yasna::models::ObjectIdentifier::from_slice(oid));
        w.next().write_utf8_string(value);
    });
}

fn extension(w: yasna::DERWriter<'_>, oid: &[u64], critical: bool, value: &[u8]) {
    w.write_sequence(|w| {
        w.next()
            .write_oid(&yasna::models::ObjectIdentifier::from_slice(oid));
        if critical {
            w.next().write_bool(true);
        }
        w.next().write_bytes(value);
    });
}

/// An RFC 5280 time: UTCTime before 2050, GeneralizedTime after.
fn utc_time(t: DateTime<Utc>) -> Vec<u8> {
    let (tag, text) = if t.year() < 2050 {
        (
            0x17,
            format!(
                "{:02}{:02}{:02}{:02}{:02}{:02}Z",
                t.year() % 100,
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            ),
        )
    } else {
        (
            0x18,
            format!(
                "{:04}{:02}{:02}{:02}{:02}{:02}Z",
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            ),
        )
    };
    let mut out = vec![tag, text.len() as u8];
    out.extend_from_slice(text.as_bytes());
    out
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_767_225_600, 0).unwrap()
    }

    #[test]
    fn client_cert_carries_every_group() {
        let ca = ClusterCa::generate("test-ca", now()).unwrap();
        let groups: Vec<String> = ["system:masters", "dev", "ops", "ci"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let cert = ca.client_cert("alice", &groups, now()).unwrap();
        let der = CertificateDer::from_pem_slice(cert.cert_pem.as_bytes()).unwrap();
        let (user, got) = certificate_identity(&der).unwrap();
        assert_eq!(user, "alice");
        assert_eq!(got, groups);
        // And it verifies against the CA.
        let (_, parsed) = x509_parser::parse_x509_certificate(&der).unwrap();
        let ca_der = CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).unwrap();
        let (_, ca_parsed) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
        parsed
            .verify_signature(Some(ca_parsed.public_key()))
            .unwrap();
    }

    #[test]
    fn ca_round_trips_through_pem() {
        let ca = ClusterCa::generate("test-ca", now()).unwrap();
        let again = ClusterCa::from_pem(ca.cert_pem(), ca.key_pem()).unwrap();
        assert_eq!(ca, again);
        again
            .serving_cert(&["127.0.0.1".into(), "localhost".into()], now())
            .unwrap();
    }
}
