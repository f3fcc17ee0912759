//! The nodes' API between machines (`--cluster-listen`): the same REST API
//! over TLS on an address other nodes reach.
//!
//! Each node makes a key and a self-signed certificate when it starts and
//! publishes the certificate's SHA-256 fingerprint in its `nodes/NODE`
//! record in etcd (which every node already trusts: it holds the desired
//! state and the cluster secret). A node forwarding a call to another pins
//! that fingerprint: no certificate authority to run, and a key never
//! leaves the process that made it (a restarted node publishes a new one
//! under its new lease).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};

/// TLS handshakes in progress at once; more connections wait in the
/// kernel's backlog (a peer that never finishes one holds a place for
/// [`HANDSHAKE_TIMEOUT`] at most).
const MAX_HANDSHAKES: usize = 64;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// A node's TLS key and certificate.
pub struct Identity {
    cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
    /// SHA-256 of the certificate (DER), lower-case hex.
    pub fingerprint: String,
}

/// Lower-case hex SHA-256 of `der`.
pub fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Identity {
    /// A fresh key and a self-signed certificate naming `node`.
    pub fn generate(node: &str) -> Result<Identity, String> {
        let c = rcgen::generate_simple_self_signed(vec![format!("{node}.pronto-node")])
            .map_err(|e| format!("--cluster-listen: making the node's TLS certificate: {e}"))?;
        let cert = CertificateDer::from(c.cert.der().to_vec());
        let key = PrivatePkcs8KeyDer::from(c.key_pair.serialize_der());
        Ok(Identity {
            fingerprint: fingerprint(&cert),
            cert,
            key,
        })
    }

    fn server_config(&self) -> Result<rustls::ServerConfig, String> {
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .and_then(|b| {
            b.with_no_client_auth().with_single_cert(
                vec![self.cert.clone()],
                PrivateKeyDer::Pkcs8(self.key.clone_key()),
            )
        })
        .map_err(|e| format!("--cluster-listen: TLS set-up: {e}"))
    }
}

/// TLS connections accepted on a TCP listener, for `axum::serve`:
/// handshakes run in their own tasks (at most [`MAX_HANDSHAKES`] at once,
/// each bounded by [`HANDSHAKE_TIMEOUT`]), so a slow or silent peer does not
/// hold up the others.
pub struct TlsListener {
    local: SocketAddr,
    ready: tokio::sync::mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        SocketAddr,
    )>,
}

impl TlsListener {
    /// Starts accepting on `tcp` (within a tokio runtime).
    pub fn start(tcp: tokio::net::TcpListener, id: &Identity) -> Result<TlsListener, String> {
        let local = tcp.local_addr().map_err(|e| e.to_string())?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(id.server_config()?));
        let (tx, ready) = tokio::sync::mpsc::channel(MAX_HANDSHAKES);
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
        tokio::spawn(async move {
            loop {
                let Ok(permit) = slots.clone().acquire_owned().await else {
                    return;
                };
                let (sock, peer) = match tcp.accept().await {
                    Ok(c) => c,
                    Err(_) => {
                        // Out of descriptors or the like: try again shortly.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, done) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let _permit = permit;
                    if let Ok(Ok(s)) =
                        tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(sock)).await
                    {
                        let _ = done.send((s, peer)).await;
                    }
                });
                if tx.is_closed() {
                    return;
                }
            }
        });
        Ok(TlsListener { local, ready })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, SocketAddr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accepting task ends only with the runtime.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// A client configuration that accepts exactly the certificate whose
/// SHA-256 is `fingerprint` (the one the node published in etcd).
pub fn pinned_client(fingerprint: &str) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(Pinned {
        fingerprint: fingerprint.to_ascii_lowercase(),
        provider: provider.clone(),
    });
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth(),
    )
}

#[derive(Debug)]
struct Pinned {
    fingerprint: String,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let got = fingerprint(end_entity);
        if got == self.fingerprint {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the node's certificate (SHA-256 {got}) is not the one it published in etcd \
                 ({})",
                self.fingerprint
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
