#!/usr/bin/env python3
"""Freezes what this machine's OpenSSL 3.0 says about cipher strings, cipher
names and key-exchange groups into the files src/tls/ reads, so that its unit
tests need no OpenSSL (tests/tls_names.rs compares them with a live OpenSSL
and nginx where they are installed).

    scripts/tls-names.py           # rewrite the files
    scripts/tls-names.py --check   # exit 1 when a file would change

It writes:

- src/tls/ciphers/table.rs: every TLS 1.2-and-below cipher OpenSSL offers
  (`openssl ciphers -V -v -stdname ALL:COMPLEMENTOFALL`) with its key
  exchange, authentication, encryption, MAC, lowest protocol and strength
  class (membership of HIGH, MEDIUM, LOW, FIPS, COMPLEMENTOFDEFAULT), and the
  names OpenSSL gives codes it knows but does not offer (SSL_CIPHER_find
  over all 65536 codes: TLS 1.3 suites, SCSVs, SEED, IDEA, GOST).
- src/tls/testdata/cipher_strings.expected: for each string of
  src/tls/testdata/cipher_strings.txt, the codes `openssl ciphers -V` lists
  (TLS 1.3 suites left out) or the error it gives.
- src/tls/testdata/groups.expected: for each group list of the same file's
  `groups` section, the codes OpenSSL's ClientHello offers for it, or the
  error queue `SSL_CTX_set1_groups_list` leaves; and the name nginx's
  $ssl_curves prints for each group code OpenSSL knows.

Standard library only; OpenSSL is reached through `openssl` and, for what
the command line cannot say, libssl.so.3 by ctypes.
"""

import argparse
import ctypes
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TABLE = os.path.join(ROOT, "src/tls/ciphers/table.rs")
CORPUS = os.path.join(ROOT, "src/tls/testdata/cipher_strings.txt")
CIPHERS_EXPECTED = os.path.join(ROOT, "src/tls/testdata/cipher_strings.expected")
GROUPS_EXPECTED = os.path.join(ROOT, "src/tls/testdata/groups.expected")

KX = {"RSA": "Rsa", "DH": "Dhe", "ECDH": "Ecdhe", "PSK": "Psk", "RSAPSK": "RsaPsk",
      "ECDHEPSK": "EcdhePsk", "DHEPSK": "DhePsk", "SRP": "Srp"}
AUTH = {"RSA": "Rsa", "DSS": "Dss", "None": "Null", "ECDSA": "Ecdsa", "PSK": "Psk", "SRP": "Srp"}
ENC = {"None": "Null", "AES(128)": "Aes128", "AES(256)": "Aes256",
       "Camellia(128)": "Camellia128", "Camellia(256)": "Camellia256",
       "AESGCM(128)": "Aes128Gcm", "AESGCM(256)": "Aes256Gcm",
       "AESCCM(128)": "Aes128Ccm", "AESCCM(256)": "Aes256Ccm",
       "AESCCM8(128)": "Aes128Ccm8", "AESCCM8(256)": "Aes256Ccm8",
       "CHACHA20/POLY1305(256)": "Chacha20Poly1305",
       "ARIAGCM(128)": "Aria128Gcm", "ARIAGCM(256)": "Aria256Gcm"}
MAC = {"MD5": "Md5", "SHA1": "Sha1", "SHA256": "Sha256", "SHA384": "Sha384", "AEAD": "Aead"}
VERSION = {"SSLv3": "SSL3", "TLSv1": "TLS1", "TLSv1.2": "TLS1_2"}
# Strength classes, in the order the table's flags name them.
CLASSES = [("HIGH", "HIGH"), ("MEDIUM", "MEDIUM"), ("LOW", "LOW"), ("FIPS", "FIPS"),
           ("COMPLEMENTOFDEFAULT", "NOT_DEFAULT")]


def openssl(*args):
    """`openssl ARGS`: (exit code, stdout, stderr)."""
    p = subprocess.run(["openssl", *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def listing(spec, *flags):
    """`openssl ciphers -V FLAGS -- SPEC` as (code, rest of line) pairs, or
    None when OpenSSL refuses the string."""
    rc, out, _ = openssl("ciphers", "-V", *flags, "--", spec)
    if rc != 0:
        return None
    rows = []
    for line in out.splitlines():
        first, rest = line.split(None, 1)
        hi, lo = first.split(",")
        rows.append(((int(hi, 16) << 8) | int(lo, 16), rest.lstrip("- ").rstrip()))
    return rows


def tls12_codes(spec):
    """The TLS 1.2-and-below codes OpenSSL selects for `spec`, in order, or
    the error as `error <reason> <count>`."""
    rc, out, err = openssl("ciphers", "-V", "--", spec)
    if rc != 0:
        invalid = err.count(":0A000118:")
        if invalid:
            return f"error invalid-command {invalid}"
        if ":0A0000B9:" in err:
            return "error no-cipher-match"
        raise SystemExit(f"openssl ciphers {spec!r}: unexpected error: {err}")
    codes = []
    for line in out.splitlines():
        hi, lo = line.split()[0].split(",")
        code = (int(hi, 16) << 8) | int(lo, 16)
        if code >> 8 != 0x13:
            codes.append(f"{code:04x}")
    return ",".join(codes)


class Ssl:
    """The few libssl calls the command line has no words for."""

    def __init__(self):
        lib = ctypes.CDLL("libssl.so.3")
        v, i, l, c = ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_char_p
        for name, res, args in [
            ("TLS_method", v, []), ("TLS_client_method", v, []),
            ("SSL_CTX_new", v, [v]), ("SSL_CTX_free", None, [v]),
            ("SSL_CTX_ctrl", l, [v, i, l, v]),
            ("SSL_CTX_set_security_level", None, [v, i]),
            ("SSL_new", v, [v]), ("SSL_free", None, [v]),
            ("SSL_set_bio", None, [v, v, v]), ("SSL_connect", i, [v]),
            ("SSL_CIPHER_find", v, [v, c]), ("SSL_CIPHER_get_name", c, [v]),
            ("BIO_s_mem", v, []), ("BIO_new", v, [v]), ("BIO_read", i, [v, c, i]),
            ("ERR_clear_error", None, []),
            ("ERR_get_error_all", ctypes.c_ulong,
             [ctypes.POINTER(c), ctypes.POINTER(i), ctypes.POINTER(c), ctypes.POINTER(c),
              ctypes.POINTER(i)]),
            ("ERR_error_string_n", None, [ctypes.c_ulong, c, ctypes.c_size_t]),
            ("OBJ_sn2nid", i, [c]), ("OBJ_nid2sn", c, [i]),
        ]:
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        self.lib = lib

    def cipher_names(self):
        """{code: name} for every code SSL_CIPHER_find knows."""
        lib = self.lib
        ctx = lib.SSL_CTX_new(lib.TLS_method())
        ssl = lib.SSL_new(ctx)
        names = {}
        for code in range(0x10000):
            c = lib.SSL_CIPHER_find(ssl, bytes([code >> 8, code & 0xFF]))
            if c:
                names[code] = lib.SSL_CIPHER_get_name(c).decode()
        lib.SSL_free(ssl)
        lib.SSL_CTX_free(ctx)
        return names

    def errors(self):
        """The error queue as nginx's ngx_ssl_error prints each entry:
        `error:...:reason` and `:data` when there is data."""
        lib, out = self.lib, []
        while True:
            data, flags = ctypes.c_char_p(), ctypes.c_int()
            n = lib.ERR_get_error_all(None, None, None, ctypes.byref(data), ctypes.byref(flags))
            if n == 0:
                return out
            buf = ctypes.create_string_buffer(256)
            lib.ERR_error_string_n(n, buf, 256)
            text = buf.value.decode()
            if data.value and flags.value & 0x02:  # ERR_TXT_STRING
                text += ":" + data.value.decode()
            out.append(text)

    def groups(self, spec, max_version=0x0304):
        """The supported_groups a client offers with `spec` set (None: the
        default), security level 0 so that no group is left out, or
        ("error", [queue]) when OpenSSL refuses the list. A list of groups
        TLS 1.3 cannot use is offered by a TLS 1.2 client (a TLS 1.3 one
        sends no ClientHello)."""
        lib = self.lib
        lib.ERR_clear_error()
        ctx = lib.SSL_CTX_new(lib.TLS_client_method())
        lib.SSL_CTX_set_security_level(ctx, 0)
        lib.SSL_CTX_ctrl(ctx, 124, max_version, None)  # SSL_CTRL_SET_MAX_PROTO_VERSION
        try:
            if spec is not None:
                # SSL_CTRL_SET_GROUPS_LIST
                if lib.SSL_CTX_ctrl(ctx, 92, 0, ctypes.c_char_p(spec.encode())) != 1:
                    return ("error", self.errors())
            ssl = lib.SSL_new(ctx)
            rb, wb = lib.BIO_new(lib.BIO_s_mem()), lib.BIO_new(lib.BIO_s_mem())
            lib.SSL_set_bio(ssl, rb, wb)
            lib.SSL_connect(ssl)
            buf = ctypes.create_string_buffer(1 << 17)
            n = lib.BIO_read(wb, buf, len(buf))
            lib.SSL_free(ssl)
            lib.ERR_clear_error()
            if (n <= 0 or buf.raw[0] != 0x16) and max_version > 0x0303:
                return self.groups(spec, 0x0303)
            if n <= 0 or buf.raw[0] != 0x16:
                raise SystemExit(f"no ClientHello for groups {spec!r}")
            return supported_groups(buf.raw[:n])
        finally:
            lib.SSL_CTX_free(ctx)

    def short_name(self, name):
        """OBJ_nid2sn(OBJ_sn2nid(name)), or None when `name` is no object's
        short name."""
        nid = self.lib.OBJ_sn2nid(name.encode())
        return self.lib.OBJ_nid2sn(nid).decode() if nid else None


def supported_groups(record):
    """The supported_groups extension (RFC 8446 4.2.7) of a ClientHello
    in one TLS record."""
    p = 5 + 4 + 2 + 32  # record header, handshake header, version, random
    p += 1 + record[p]  # session id
    p += 2 + int.from_bytes(record[p:p + 2], "big")  # cipher suites
    p += 1 + record[p]  # compression methods
    end = p + 2 + int.from_bytes(record[p:p + 2], "big")
    p += 2
    while p < end:
        kind = int.from_bytes(record[p:p + 2], "big")
        size = int.from_bytes(record[p + 2:p + 4], "big")
        if kind == 10:
            body = record[p + 6:p + 4 + size]
            return [int.from_bytes(body[i:i + 2], "big") for i in range(0, len(body), 2)]
        p += 4 + size
    return []


def corpus():
    """(cipher strings, group lists) of the corpus file: one a line, `#`
    comments, a line `[groups]` between the two parts. A string is taken
    as it stands between the first and last character of the line; `""`
    stands for the empty string."""
    ciphers, groups, part = [], [], None
    with open(CORPUS) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if line in ("[ciphers]", "[groups]"):
                part = ciphers if line == "[ciphers]" else groups
                continue
            part.append("" if line == '""' else line)
    return ciphers, groups


def version():
    """`OpenSSL 3.0.x DATE`, the library's version left out."""
    return openssl("version")[1].strip().split(" (")[0]


def table_rs(ssl):
    rows = listing("ALL:COMPLEMENTOFALL", "-v", "-stdname")
    classes = {}
    for alias, flag in CLASSES:
        for code, _ in listing(alias) or []:
            classes.setdefault(code, []).append(flag)
    offered = set()
    out = [
        "//! The ciphers OpenSSL 3.0 offers below TLS 1.3, as",
        "//! `openssl ciphers -V -v -stdname ALL:COMPLEMENTOFALL` lists them, and the",
        "//! names it gives the codes it knows but does not offer.",
        "//!",
        f"//! Generated by scripts/tls-names.py from {version()}: do not edit.",
        "",
        "use super::{Auth, Cipher, Enc, Kx, Mac, class::*, version::*};",
        "",
        "/// Every cipher OpenSSL offers below TLS 1.3, by code.",
        "pub(super) const CIPHERS: &[Cipher] = &[",
    ]
    entries = []
    for code, rest in rows:
        if code >> 8 == 0x13:
            continue
        # stdname - name version Kx= Au= Enc= Mac=
        std, _, name, ver, kx, au, enc, mac = rest.split()
        kx, au, enc, mac = (f.split("=", 1)[1] for f in (kx, au, enc, mac))
        bits = 0 if enc == "None" else int(enc[enc.index("(") + 1:-1])
        flags = classes.get(code, [])
        if enc == "None":
            # NULL ciphers are of no class (OpenSSL's SSL_STRONG_NONE);
            # the FIPS flag of some is unobservable (FIPS excludes eNULL).
            flags = ["NONE"] + [f for f in flags if f == "NOT_DEFAULT"]
        offered.add(code)
        entries.append((code, name, std, KX[kx], AUTH[au], ENC[enc], MAC[mac], VERSION[ver],
                        bits, " | ".join(flags) or "0"))
    for e in sorted(entries):
        code, name, std, kx, au, enc, mac, ver, bits, flags = e
        out.append("    Cipher {")
        out.append(f"        code: 0x{code:04X},")
        out.append(f'        name: "{name}",')
        out.append(f'        iana_name: "{std}",')
        out.append(f"        kx: Kx::{kx},")
        out.append(f"        auth: Auth::{au},")
        out.append(f"        enc: Enc::{enc},")
        out.append(f"        mac: Mac::{mac},")
        out.append(f"        min_version: {ver},")
        out.append(f"        bits: {bits},")
        out.append(f"        class: {flags},")
        out.append("    },")
    out.append("];")
    out.append("")
    out.append("/// The names OpenSSL's `SSL_CIPHER_find` gives codes it knows but does not")
    out.append("/// offer below TLS 1.3 (TLS 1.3 suites, signalling values, ciphers of")
    out.append("/// algorithms its providers lack), by code.")
    out.append("pub(super) const OTHER_NAMES: &[(u16, &str)] = &[")
    for code, name in sorted(ssl.cipher_names().items()):
        if code not in offered:
            out.append(f'    (0x{code:04X}, "{name}"),')
    out.append("];")
    return "\n".join(out) + "\n"


def ciphers_expected(specs):
    out = [f"# Generated by scripts/tls-names.py from {version()}: do not edit.",
           "# A cipher string, a tab, then the TLS 1.2-and-below codes `openssl ciphers`",
           "# selects for it in order, or the error it gives (with how many times).",
           ]
    for spec in specs:
        if "\t" in spec or "\n" in spec:
            raise SystemExit(f"{spec!r}: no tab or newline in a corpus string")
        out.append(f"{spec}\t{tls12_codes(spec)}")
    return "\n".join(out) + "\n"


# The names OpenSSL 3.0's default provider gives its TLS groups (tlsname and
# realname both), tried one by one; the ones it refuses are left out.
GROUP_NAMES = """sect163k1 sect163r1 sect163r2 sect193r1 sect193r2 sect233k1 sect233r1
sect239k1 sect283k1 sect283r1 sect409k1 sect409r1 sect571k1 sect571r1 secp160k1 secp160r1
secp160r2 secp192k1 secp192r1 prime192v1 P-192 secp224k1 secp224r1 P-224 secp256k1
secp256r1 prime256v1 P-256 secp384r1 P-384 secp521r1 P-521 brainpoolP256r1
brainpoolP384r1 brainpoolP512r1 x25519 X25519 x448 X448 ffdhe2048 ffdhe3072 ffdhe4096
ffdhe6144 ffdhe8192 brainpoolP256r1tls13 X25519MLKEM768 GC256A sm2 curveSM2""".split()


def groups_expected(ssl, lists):
    out = [f"# Generated by scripts/tls-names.py from {version()}: do not edit.",
           "# `name` lines: a group name OpenSSL accepts, its code, and the name nginx's",
           "# $ssl_curves prints for that code (OBJ_nid2sn of its NID).",
           "# `list` lines: an ssl_ecdh_curve value, a tab, the codes OpenSSL offers",
           "# for it in order, or `error` and the error queue (`|` between entries).",
           "# `auto`: OpenSSL's default list.",
           ]
    known = {}
    for name in GROUP_NAMES:
        got = ssl.groups(name)
        if isinstance(got, tuple):
            continue
        (code,) = got
        known.setdefault(code, []).append(name)
    for code, names in sorted(known.items()):
        printed = [s for s in (ssl.short_name(n) for n in names) if s]
        if len(set(printed)) != 1:
            raise SystemExit(f"group {code:#06x} ({names}): no one short name ({printed})")
        for name in names:
            out.append(f"name\t{name}\t{code:04x}\t{printed[0]}")
    out.append("auto\t" + ",".join(f"{c:04x}" for c in ssl.groups(None)))
    for spec in lists:
        got = ssl.groups(spec)
        if isinstance(got, tuple):
            out.append(f"list\t{spec}\terror\t" + "|".join(got[1]))
        else:
            out.append(f"list\t{spec}\t" + ",".join(f"{c:04x}" for c in got))
    return "\n".join(out) + "\n"


def rustfmt(text):
    """`text` as rustfmt leaves it (the table is committed formatted)."""
    p = subprocess.run(["rustfmt", "--edition", "2024", "--emit", "stdout"], input=text,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"rustfmt: {p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a file would change")
    args = ap.parse_args()
    if not version().startswith("OpenSSL 3.0."):
        raise SystemExit(f"this needs OpenSSL 3.0, not {version()}")
    ssl = Ssl()
    specs, lists = corpus()
    files = {
        TABLE: rustfmt(table_rs(ssl)),
        CIPHERS_EXPECTED: ciphers_expected(specs),
        GROUPS_EXPECTED: groups_expected(ssl, lists),
    }
    stale = []
    for path, text in files.items():
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(os.path.relpath(path, ROOT))
            if not args.check:
                with open(path, "w") as f:
                    f.write(text)
    if args.check and stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        sys.exit(1)
    for path in stale:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
