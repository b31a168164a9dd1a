//! The service-account signing key of one cluster: an ECDSA P-256 key
//! (kube-apiserver's `--service-account-signing-key-file` accepts RSA and EC
//! keys; ring can generate only the latter), made at cluster creation and
//! kept with the record beside its CA so a restart can reload it
//! ([`ServiceAccountKey::from_pem`]). It signs TokenRequest and legacy
//! Secret tokens (ES256) and is published as a JWK at `/openid/v1/jwks`.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _,
    UnparsedPublicKey,
};
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;
use serde_json::{Value, json};

use crate::error::PkiError;

/// The DER prefix of a P-256 SubjectPublicKeyInfo, before the 65-byte point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// A cluster's service-account signing key. Serialized as its PKCS#8 PEM
/// (the state directory keeps it beside the cluster's CA).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ServiceAccountKey {
    inner: Arc<Inner>,
}

struct Inner {
    key_pem: String,
    pair: EcdsaKeyPair,
    kid: String,
}

impl std::fmt::Debug for ServiceAccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountKey")
            .field("kid", &self.inner.kid)
            .finish_non_exhaustive()
    }
}

impl TryFrom<String> for ServiceAccountKey {
    type Error = PkiError;
    fn try_from(pem: String) -> Result<Self, PkiError> {
        Self::from_pem(&pem)
    }
}

impl From<ServiceAccountKey> for String {
    fn from(key: ServiceAccountKey) -> String {
        key.inner.key_pem.clone()
    }
}

impl PartialEq for ServiceAccountKey {
    fn eq(&self, other: &Self) -> bool {
        self.inner.key_pem == other.inner.key_pem
    }
}

impl ServiceAccountKey {
    /// A new random key.
    pub fn generate() -> Result<Self, PkiError> {
        let key = rcgen::KeyPair::generate()?;
        Self::from_pem(&key.serialize_pem())
    }

    /// The key loaded from its PKCS#8 PEM (what [`Self::key_pem`] wrote).
    pub fn from_pem(key_pem: &str) -> Result<Self, PkiError> {
        let der = match PrivateKeyDer::from_pem_slice(key_pem.as_bytes()) {
            Ok(PrivateKeyDer::Pkcs8(der)) => der,
            Ok(_) => return Err(PkiError::Parse("not a PKCS#8 key".into())),
            Err(e) => return Err(PkiError::Parse(e.to_string())),
        };
        let pair = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            der.secret_pkcs8_der(),
            &SystemRandom::new(),
        )
        .map_err(|e| PkiError::Parse(format!("not a P-256 key: {e}")))?;
        // Upstream's key id: base64url(SHA-256(DER SubjectPublicKeyInfo)).
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(pair.public_key().as_ref());
        let kid = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
        Ok(Self {
            inner: Arc::new(Inner {
                key_pem: key_pem.to_owned(),
                pair,
                kid,
            }),
        })
    }

    /// The private key, PKCS#8 PEM (persisted so a restart keeps the key).
    pub fn key_pem(&self) -> &str {
        &self.inner.key_pem
    }

    /// The key id published in the JWKS and put in token headers.
    pub fn kid(&self) -> &str {
        &self.inner.kid
    }

    /// The public key as a JWK (`kty: EC`, `crv: P-256`, `alg: ES256`).
    pub fn jwk(&self) -> Value {
        let point = self.inner.pair.public_key().as_ref();
        let (x, y) = point[1..].split_at(32);
        json!({
            "use": "sig",
            "kty": "EC",
            "kid": self.inner.kid,
            "crv": "P-256",
            "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        })
    }

    /// A compact JWS (ES256) of `claims`.
    pub fn sign_jwt(&self, claims: &Value) -> Result<String, PkiError> {
        let header = json!({ "alg": "ES256", "kid": self.inner.kid });
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self
            .inner
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|e| PkiError::Generate(format!("signing failed: {e}")))?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())))
    }

    /// The claims of a compact JWS this key signed; `None` when the token is
    /// not a JWS, is not ES256, or its signature does not verify.
    pub fn verify_jwt(&self, token: &str) -> Option<Value> {
        let mut parts = token.split('.');
        let (h, c, s) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).ok()?).ok()?;
        if header["alg"] != "ES256" {
            return None;
        }
        let sig = URL_SAFE_NO_PAD.decode(s).ok()?;
        let public = UnparsedPublicKey::new(
            &ECDSA_P256_SHA256_FIXED,
            self.inner.pair.public_key().as_ref(),
        );
        public.verify(format!("{h}.{c}").as_bytes(), &sig).ok()?;
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(c).ok()?).ok()
    }
}

/// The claims of a compact JWS without checking anything: to decide whose
/// token it is (its `iss`) before verifying it.
pub fn peek_claims(token: &str) -> Option<Value> {
    let mut parts = token.split('.');
    let (_, c, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(c).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_and_verifies_and_reloads() {
        let key = ServiceAccountKey::generate().unwrap();
        let token = key.sign_jwt(&json!({"sub": "x"})).unwrap();
        assert_eq!(key.verify_jwt(&token).unwrap()["sub"], "x");
        assert_eq!(peek_claims(&token).unwrap()["sub"], "x");
        let again = ServiceAccountKey::from_pem(key.key_pem()).unwrap();
        assert_eq!(again.kid(), key.kid());
        assert!(again.verify_jwt(&token).is_some());
        let other = ServiceAccountKey::generate().unwrap();
        assert!(other.verify_jwt(&token).is_none());
        let mut bad = token.clone();
        bad.push('A');
        assert!(key.verify_jwt(&bad).is_none());
        let jwk = key.jwk();
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(
            URL_SAFE_NO_PAD
                .decode(jwk["x"].as_str().unwrap())
                .unwrap()
                .len(),
            32
        );
    }
}
