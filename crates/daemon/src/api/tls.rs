//! The nodes' API between machines (`--cluster-listen`): the same REST API
//! over TLS on an address other nodes reach.
//!
//! Each node makes a key and a self-signed certificate when it first
//! starts, keeps them in its state directory (`cluster-tls.key`,
//! `cluster-tls.crt`, readable by root only, as an SSH host key is kept),
//! and publishes the certificate's SHA-256 fingerprint in its `nodes/NODE`
//! record in etcd (which every node already trusts: it holds the desired
//! state and the cluster secret). A node forwarding a call to another pins
//! that fingerprint: no certificate authority to run. Operators' clients
//! on other machines (`pronto --url https://... --fingerprint SHA256`, the
//! Python client's `fingerprint=`) pin it too: it stays the same across
//! restarts, and removing the two files makes a new one.

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
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

    /// The node's key and certificate kept in `dir` (`cluster-tls.key`,
    /// `cluster-tls.crt`, DER, mode 0600), made and written there on first
    /// use, so that the fingerprint clients pin stays across restarts. A
    /// file that cannot be read or used is an error naming it (remove both
    /// to make a new pair).
    pub fn load_or_generate(dir: &Path, node: &str) -> Result<Identity, String> {
        let (kp, cp) = (dir.join("cluster-tls.key"), dir.join("cluster-tls.crt"));
        if kp.exists() || cp.exists() {
            let read = |p: &Path| {
                std::fs::read(p).map_err(|e| {
                    format!(
                        "--cluster-listen: reading {}: {e} (remove {} and {} to make a new \
                         certificate; clients pinning the old one must pin the new one)",
                        p.display(),
                        kp.display(),
                        cp.display()
                    )
                })
            };
            // Root's alone, whatever an older daemon or a copy left.
            for p in [&kp, &cp] {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600));
            }
            let cert = CertificateDer::from(read(&cp)?);
            let id = Identity {
                fingerprint: fingerprint(&cert),
                cert,
                key: PrivatePkcs8KeyDer::from(read(&kp)?),
            };
            id.server_config().map_err(|e| {
                format!(
                    "{e}: {} and {} do not make a key and its certificate (remove both to make \
                     a new pair)",
                    kp.display(),
                    cp.display()
                )
            })?;
            return Ok(id);
        }
        let id = Identity::generate(node)?;
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--cluster-listen: creating {}: {e}", dir.display()))?;
        let write = |p: &Path, bytes: &[u8]| -> Result<(), String> {
            let tmp = p.with_extension("tmp");
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)
                .and_then(|mut f| {
                    f.write_all(bytes)?;
                    f.sync_all()
                })
                .and_then(|()| std::fs::rename(&tmp, p))
                .map_err(|e| format!("--cluster-listen: writing {}: {e}", p.display()))
        };
        write(&kp, id.key.secret_pkcs8_der())?;
        write(&cp, &id.cert)?;
        Ok(id)
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

/// Where the fingerprint a client pins came from (said when the node
/// shows another certificate).
#[derive(Clone, Copy, Debug)]
pub enum PinSource {
    /// The node's record in etcd (a node forwarding to another).
    Etcd,
    /// The operator (`--fingerprint`, `PRONTO_FINGERPRINT`).
    Operator,
}

/// A client configuration that accepts exactly the certificate whose
/// SHA-256 is `fingerprint` (the one the node published in etcd).
pub fn pinned_client(fingerprint: &str) -> Arc<rustls::ClientConfig> {
    pinned_client_from(fingerprint, PinSource::Etcd)
}

/// [`pinned_client`], the fingerprint from `source`.
pub fn pinned_client_from(fingerprint: &str, source: PinSource) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(Pinned {
        fingerprint: fingerprint.to_ascii_lowercase(),
        source,
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
    source: PinSource,
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
            Err(rustls::Error::General(match self.source {
                PinSource::Etcd => format!(
                    "the node's certificate (SHA-256 {got}) is not the one it published in \
                     etcd ({})",
                    self.fingerprint
                ),
                PinSource::Operator => format!(
                    "the node's certificate (SHA-256 {got}) is not the one --fingerprint / \
                     PRONTO_FINGERPRINT names ({}): check the address, and the node's \
                     fingerprint (`pronto cluster nodes`, or the daemon's first lines)",
                    self.fingerprint
                ),
            }))
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

/// A blocking TLS connection to a node's `--cluster-listen` address, its
/// certificate pinned by the operator's `fingerprint` (the CLI's
/// `--url https://...`): the handshake done, or why not.
pub fn connect_pinned(
    addr: &str,
    fingerprint: &str,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>, String> {
    let mut tcp = std::net::TcpStream::connect(addr)
        .map_err(|e| format!("cannot reach the daemon at {addr}: {e}"))?;
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(120)));
    // The certificate is pinned, not checked against a name: any name does.
    let name = ServerName::try_from("pronto-node").expect("a valid DNS name");
    let mut conn =
        rustls::ClientConnection::new(pinned_client_from(fingerprint, PinSource::Operator), name)
            .map_err(|e| format!("TLS set-up: {e}"))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).map_err(|e| {
            // The verifier's own words, without rustls's "unexpected error".
            let e = match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                Some(rustls::Error::General(m)) => m.clone(),
                Some(other) => other.to_string(),
                None => e.to_string(),
            };
            format!("TLS handshake with {addr}: {e}")
        })?;
    }
    Ok(rustls::StreamOwned::new(conn, tcp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_nodes_certificate_is_kept_across_restarts_and_a_bad_file_is_named() {
        let dir = std::env::temp_dir().join(format!("pronto-tls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = Identity::load_or_generate(&dir, "n1").expect("works");
        let key = dir.join("cluster-tls.key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("works");
        let again = Identity::load_or_generate(&dir, "n1").expect("works");
        assert_eq!(first.fingerprint, again.fingerprint);
        assert_eq!(first.fingerprint.len(), 64);
        let mode = |f: &str| {
            std::fs::metadata(dir.join(f))
                .expect("works")
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(
            (mode("cluster-tls.key"), mode("cluster-tls.crt")),
            (0o600, 0o600)
        );
        // A key that is not the certificate's.
        let other = Identity::generate("n2").expect("works");
        std::fs::write(dir.join("cluster-tls.key"), other.key.secret_pkcs8_der()).expect("works");
        let e = Identity::load_or_generate(&dir, "n1")
            .err()
            .expect("refused");
        assert!(
            e.contains("cluster-tls.key and") && e.contains("remove both to make a new pair"),
            "{e}"
        );
        // One of the two gone.
        std::fs::remove_file(dir.join("cluster-tls.crt")).expect("works");
        let e = Identity::load_or_generate(&dir, "n1")
            .err()
            .expect("refused");
        assert!(e.contains("cluster-tls.crt: No such file"), "{e}");
        // Both gone: a new one.
        std::fs::remove_file(dir.join("cluster-tls.key")).expect("works");
        let new = Identity::load_or_generate(&dir, "n1").expect("works");
        assert_ne!(new.fingerprint, first.fingerprint);
        std::fs::remove_dir_all(&dir).expect("works");
    }
}
