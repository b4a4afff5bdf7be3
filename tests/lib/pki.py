"""A throw-away PKI for TLS tests, made with the `openssl` command.

    p = make_pki(directory)
    p.ca            root CA certificate (PEM), what clients verify against
    p.a_chain       a.test leaf (RSA 2048) + intermediate CA, SAN a.test, localhost, 127.0.0.1
    p.a_key         its key (unencrypted PEM)
    p.a_key_enc     the same key, AES-256 encrypted with the passphrase in p.passfile
    p.b_chain       b.test leaf (ECDSA P-256) + intermediate CA, SAN b.test
    p.b_key         its key
    p.a_leaf_only   a.test leaf without the intermediate

Everything is signed by an intermediate CA under the root, so a client that verifies a.test or
b.test needs the chain the server sends.  Certificates are valid for a year.
"""

import os
import subprocess


def _run(args, cwd):
    p = subprocess.run(["openssl"] + args, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (" ".join(args),
                                                      p.stderr.decode(errors="replace")))
    return p.stdout


class Pki:
    pass


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _leaf(d, name, keyspec, signer, sans):
    key, csr, crt = name + ".key", name + ".csr", name + ".pem"
    _run(["req", "-new", "-newkey", keyspec[0]] + keyspec[1:] + ["-nodes", "-keyout", key,
          "-out", csr, "-subj", "/O=lfhttpd tests/CN=%s" % name], d)
    _write(os.path.join(d, name + ".ext"),
           "basicConstraints=critical,CA:FALSE\n"
           "keyUsage=critical,digitalSignature,keyEncipherment\n"
           "extendedKeyUsage=serverAuth\n"
           "subjectAltName=%s\n"
           # Revocation pointers as a public CA's certificates carry (never contacted: .invalid)
           "authorityInfoAccess=OCSP;URI:http://ocsp.invalid/\n"
           "crlDistributionPoints=URI:http://crl.invalid/intermediate.crl\n" % sans)
    _run(["x509", "-req", "-in", csr, "-CA", signer + ".pem", "-CAkey", signer + ".key",
          "-CAcreateserial", "-days", "365", "-sha256", "-extfile", name + ".ext", "-out", crt], d)
    return crt, key


def make_pki(d):
    os.makedirs(d, exist_ok=True)
    ec = ["ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    _write(os.path.join(d, "ca.ext"),
           "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
           "subjectKeyIdentifier=hash\n")
    _run(["req", "-x509", "-newkey"] + ec + ["-nodes", "-keyout", "ca.key", "-out", "ca.pem",
          "-days", "365", "-sha256", "-subj", "/O=lfhttpd tests/CN=lfhttpd test root CA",
          "-addext", "basicConstraints=critical,CA:TRUE",
          "-addext", "keyUsage=critical,keyCertSign,cRLSign"], d)
    _run(["req", "-new", "-newkey"] + ec + ["-nodes", "-keyout", "int.key", "-out", "int.csr",
          "-subj", "/O=lfhttpd tests/CN=lfhttpd test intermediate CA"], d)
    _write(os.path.join(d, "int.ext"),
           "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n"
           "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    _run(["x509", "-req", "-in", "int.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
          "-CAcreateserial", "-days", "365", "-sha256", "-extfile", "int.ext",
          "-out", "int.pem"], d)
    a_crt, a_key = _leaf(d, "a.test", ["rsa:2048"], "int",
                         "DNS:a.test,DNS:localhost,IP:127.0.0.1")
    b_crt, b_key = _leaf(d, "b.test", ec, "int", "DNS:b.test")
    inter = open(os.path.join(d, "int.pem")).read()
    p = Pki()
    p.dir = d
    p.ca = os.path.join(d, "ca.pem")
    p.a_leaf_only = os.path.join(d, a_crt)
    p.a_chain = os.path.join(d, "a.test.chain.pem")
    _write(p.a_chain, open(os.path.join(d, a_crt)).read() + inter)
    p.b_chain = os.path.join(d, "b.test.chain.pem")
    _write(p.b_chain, open(os.path.join(d, b_crt)).read() + inter)
    p.a_key = os.path.join(d, a_key)
    p.b_key = os.path.join(d, b_key)
    p.passfile = os.path.join(d, "passphrase.txt")
    _write(p.passfile, "correct horse battery staple\n")
    p.a_key_enc = os.path.join(d, "a.test.enc.key")
    _run(["pkey", "-in", a_key, "-aes256", "-passout", "file:" + p.passfile,
          "-out", p.a_key_enc], d)
    return p


if __name__ == "__main__":
    import sys
    p = make_pki(sys.argv[1])
    for k in ("ca", "a_chain", "a_key", "b_chain", "b_key", "a_key_enc", "passfile"):
        print("%s=%s" % (k, getattr(p, k)))
