"""TLS for the test HTTP servers: a self-signed certificate made at test time.

``self_signed(folder)`` writes ``cert.pem`` and ``key.pem`` for ``127.0.0.1`` (an IP
subject alternative name, so a client that trusts the certificate also accepts the host
name; ``names=`` adds DNS names, for a test that resolves them to 127.0.0.1) and returns
both paths; ``server_context(certificate)`` is the server side's
``ssl.SSLContext``; pass it to ``McpHttpServer(tls=...)`` or ``LegacySseServer(tls=...)``,
which put it around their listening socket with ``wrap_listener``.

``self_signed`` uses ``cryptography`` (a test dependency, through ``pyjwt[crypto]``);
nothing is read from the network or from the machine's CA store.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

__all__ = ["Certificate", "self_signed", "server_context", "wrap_listener"]


@dataclass(frozen=True)
class Certificate:
    cert: Path  # PEM: what a client that trusts this server names as its CA bundle
    key: Path  # PEM, unencrypted


def self_signed(folder: Path, host: str = "127.0.0.1", names: Sequence[str] = ()) -> Certificate:
    """A fresh self-signed certificate for ``host`` (an IP address) and the DNS
    ``names``, valid for a day."""
    # Imported here: the servers import this module, and the Python version matrix
    # (noxfile.py) runs their tests without cryptography installed.
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"mcp-sync test {host}")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address(host)), *map(x509.DNSName, names)]),
            critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True,
            crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return Certificate(cert_path, key_path)


def server_context(certificate: Certificate) -> ssl.SSLContext:
    """The server side of TLS with ``certificate``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(certificate.cert), str(certificate.key))
    return context


def wrap_listener(listener: socket.socket, context: ssl.SSLContext) -> ssl.SSLSocket:
    """``context`` around a listening socket. The handshake of each accepted connection
    happens on its first read, on that connection's handler thread, so a client that
    refuses the certificate fails its own connection only, never the accepting thread."""
    return context.wrap_socket(listener, server_side=True, do_handshake_on_connect=False)
