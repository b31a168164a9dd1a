//! Who is calling: the client certificate presented on the TLS connection,
//! captured once per connection and read by handlers.

use std::any::Any;

use actix_tls::accept::rustls_0_23::TlsStream;
use actix_web::dev::Extensions;
use actix_web::rt::net::TcpStream;

/// The user and groups a client certificate names, if one was presented,
/// with the certificate itself: the TLS layer took it unverified (as
/// kube-apiserver does), so the authenticator checks it against the
/// cluster CA before believing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerIdentity {
    /// `CN` of the certificate.
    pub user: Option<String>,
    /// Every `O` of the certificate.
    pub groups: Vec<String>,
    /// The certificate (DER).
    pub certificate: Vec<u8>,
}

/// `HttpServer::on_connect` callback: records the peer's certificate identity.
/// rustls has checked that the client holds the certificate's key, not its chain.
pub fn on_connect(conn: &dyn Any, ext: &mut Extensions) {
    let Some(tls) = conn.downcast_ref::<TlsStream<TcpStream>>() else {
        return;
    };
    let (tcp, session) = tls.get_ref();
    // Watch events are small writes that must leave at once, not wait for
    // the peer's delayed ACK (Nagle).
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "TCP_NODELAY");
    }
    let identity = session
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|leaf| {
            kemu_shared::pki::certificate_identity(leaf).map(|(user, groups)| PeerIdentity {
                user: Some(user),
                groups,
                certificate: leaf.to_vec(),
            })
        })
        .unwrap_or_default();
    ext.insert(identity);
}
