"""TLS to the broker: the SSL context built from ``[broker]``, and a failed handshake in words.

``tls_context`` verifies the broker's certificate against ``tls_ca_file`` (the system's CAs
without it) and the name ``tls_server_name`` (default: ``host``), or not at all with
``tls_insecure``. ``describe_tls_error`` turns an ``ssl.SSLError`` into one line saying what
is wrong and which ``[broker]`` key fixes it; for a name mismatch it names what the
certificate is for (read by a second handshake that checks the CA but not the name).
"""

from __future__ import annotations

import socket
import ssl

from edgebayes.runtime.config import BrokerConfig, ConfigError

#: OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH
NAME_MISMATCH = (62, 64)
#: OpenSSL's verify codes of a certificate not signed by a trusted CA
UNTRUSTED = (2, 18, 19, 20, 21)
#: seconds the second handshake (reading the certificate's names) may take
PEEK_TIMEOUT_S = 5.0


class _ServerNameContext(ssl.SSLContext):
    """An SSL context that checks (and sends as SNI) ``server_name`` instead of the host
    connected to: paho passes its ``host`` as ``server_hostname``."""

    def __init__(self, protocol: int, server_name: str):
        self.server_name = server_name

    def wrap_socket(self, sock, *args, server_hostname=None, **kwargs):
        return super().wrap_socket(sock, *args, server_hostname=self.server_name, **kwargs)


def tls_context(cfg: BrokerConfig) -> ssl.SSLContext | None:
    """The SSL context for ``cfg`` (None when no ``tls_*`` key is set: plain MQTT).

    Raises:
        ConfigError: a CA, certificate or key file that cannot be read or parsed, or a key that
            does not match the certificate (one line naming the key and the file).
    """
    if not cfg.tls:
        return None
    if cfg.tls_server_name is not None:
        ctx = _ServerNameContext(ssl.PROTOCOL_TLS_CLIENT, cfg.tls_server_name)
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cfg.tls_insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif cfg.tls_ca_file is not None:
        try:
            ctx.load_verify_locations(cafile=cfg.tls_ca_file)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            why = f"[broker] tls_ca_file {cfg.tls_ca_file}: not PEM CA certificates ({_reason(exc)})"
            raise ConfigError([why], "TLS") from None
    else:
        ctx.load_default_certs()
    if cfg.tls_cert_file is not None:
        try:
            ctx.load_cert_chain(cfg.tls_cert_file, cfg.tls_key_file)
        except (OSError, ValueError) as exc:
            why = (f"[broker] tls_cert_file {cfg.tls_cert_file} and tls_key_file {cfg.tls_key_file}: "
                   f"not a PEM certificate and its key ({_reason(exc)})")
            raise ConfigError([why], "TLS") from None
    return ctx


def _reason(exc: Exception) -> str:
    return getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)


def certificate_names(cfg: BrokerConfig) -> list[str]:
    """The names the broker's certificate holds (DNS and IP subject alternative names, else its
    common name), read by a handshake that verifies the CA but not the name; [] if that fails."""
    ctx = ssl.create_default_context(cafile=cfg.tls_ca_file)
    ctx.check_hostname = False
    try:
        if cfg.tls_cert_file is not None:
            ctx.load_cert_chain(cfg.tls_cert_file, cfg.tls_key_file)
        with (socket.create_connection((cfg.host, cfg.port), timeout=PEEK_TIMEOUT_S) as sock,
              ctx.wrap_socket(sock) as tls):
            cert = tls.getpeercert() or {}
    except (OSError, ValueError):
        return []
    names = [v for k, v in cert.get("subjectAltName", ()) if k in ("DNS", "IP Address")]
    return names or [v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"]


def describe_tls_error(exc: ssl.SSLError, cfg: BrokerConfig) -> str:
    """One line: what failed in the TLS handshake with the broker, and the ``[broker]`` key to set."""
    code = getattr(exc, "verify_code", None)
    if code in NAME_MISMATCH:
        name = cfg.tls_server_name or cfg.host
        names = certificate_names(cfg)
        holds = f"is for {', '.join(names)}" if names else "does not hold it"
        return (f"TLS: certificate name mismatch: the broker's certificate {holds}, not {name} "
                "(set [broker] tls_server_name)")
    if code is not None:  # any other verification failure
        hint = ("set [broker] tls_ca_file to the CA that signed it, or tls_insecure = true for a "
                "test broker" if code in UNTRUSTED else "tls_insecure = true skips the check, for a test broker")
        return f"TLS: the broker's certificate is refused: {exc.verify_message} ({hint})"
    reason = exc.reason or ""
    if "CERTIFICATE_REQUIRED" in reason:
        return "TLS: the broker requires a client certificate (set [broker] tls_cert_file and tls_key_file)"
    if "UNKNOWN_CA" in reason or "BAD_CERTIFICATE" in reason or "CERTIFICATE_UNKNOWN" in reason:
        return (f"TLS: the broker refused the client certificate {cfg.tls_cert_file} ({reason}): it must "
                "be signed by a CA the broker trusts (its cafile)")
    if "WRONG_VERSION_NUMBER" in reason or "RECORD_LAYER_FAILURE" in reason:
        return f"TLS: the broker does not speak TLS on port {cfg.port} (a plain MQTT listener?)"
    if isinstance(exc, ssl.SSLEOFError) or "UNEXPECTED_EOF" in reason:
        if cfg.tls_cert_file is not None:
            return (f"TLS: the broker closed the connection: it refused the client certificate "
                    f"{cfg.tls_cert_file} (not signed by a CA it trusts?), or port {cfg.port} is "
                    "not a TLS listener")
        return f"TLS: the broker closed the connection during the handshake (is port {cfg.port} a TLS listener?)"
    return f"TLS: {reason or exc}"
