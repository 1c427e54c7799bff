#!/usr/bin/env bash
# Makes the TLS fixtures the tests use (committed; run again only to change
# them): a CA, server certificates for localhost (RSA-2048 and ECDSA P-256),
# example.com and other.test, an expired one, a client certificate, ticket
# key files in nginx's two sizes, the OCSP stapling fixtures
# (make-ocsp.sh) and those of TLS to upstreams (make-upstream.sh); for
# client verification (ssl_verify_client) client certificates signed by
# the CA, by an intermediate, by a second CA, self-signed, revoked (with the
# CA's CRL of clients, client-ca.crl), expired, and one with a subject that
# needs escaping; encrypted copies of the localhost ECDSA key (PKCS#8
# PBES2, OpenSSL's traditional PEM with AES-128, AES-256 and DES-EDE3) and
# a password file. Everything but the expired certificates is valid for
# 100 years, so the fixtures do not age.
set -euo pipefail
cd "$(dirname "$0")"
days=36500
ext() { printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n' "$1" "${2:-serverAuth}"; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
    -subj "/CN=nowait test CA" -keyout ca.key -out ca.crt 2>/dev/null

leaf() { # name key-kind subject san [usage [ca]]
    local name=$1 kind=$2 subj=$3 san=$4 usage=${5:-serverAuth} ca=${6:-ca}
    if [[ $kind == rsa ]]; then opt=(-newkey rsa:2048); else opt=(-newkey ec -pkeyopt ec_paramgen_curve:P-256); fi
    openssl req "${opt[@]}" -nodes -utf8 -multivalue-rdn -subj "$subj" -keyout "$name.key" -out "$name.csr" 2>/dev/null
    ext "$san" "$usage" > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -days "$days" \
        -extfile "$name.ext" -out "$name.crt" 2>/dev/null
    rm -f "$name.csr" "$name.ext"
}
leaf localhost-rsa rsa "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
leaf localhost-ec ec "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
leaf example rsa "/CN=example.com" "DNS:example.com,DNS:www.example.com"
leaf other ec "/CN=other.test" "DNS:other.test"
leaf client ec "/C=XX/O=nowait tests/CN=client one" "email:client@example.com" clientAuth

# Client verification: a second CA, an intermediate CA under the first, and
# client certificates under each.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
    -subj "/O=nowait/CN=nowait other CA" -keyout ca2.key -out ca2.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/O=nowait/CN=nowait intermediate" \
    -keyout int.key -out int.csr 2>/dev/null
printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n' > int.ext
openssl x509 -req -in int.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile int.ext -out int.crt 2>/dev/null
rm -f int.csr int.ext
leaf client-ca2 ec "/C=XX/O=nowait tests/CN=client of ca2" "email:two@example.com" clientAuth ca2
leaf client-int rsa "/C=XX/O=nowait tests/CN=client via intermediate" "email:int@example.com" clientAuth int
cat client-int.crt int.crt > client-int-chain.crt
# Escaping in both DN forms: RFC 2253 specials, a multi-valued RDN, UTF-8.
leaf client-odd ec "/C=XX/O=nowait, tests/OU=Ünïcode #1/CN=odd \"one\"; x=y+UID=u1/emailAddress=odd@example.com" \
    "email:odd@example.com" clientAuth
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
    -subj "/CN=self-signed client" -addext extendedKeyUsage=clientAuth \
    -keyout client-self.key -out client-self.crt 2>/dev/null

# Expired: valid for one day, ten years ago (openssl ca sets the dates).
mkdir -p ca.db && : > ca.db/index.txt && echo 1000 > ca.db/serial && echo 01 > ca.db/crlnumber
cat > ca.db/ca.cnf <<CNF
[ ca ]
default_ca = test
[ test ]
dir = ca.db
database = ca.db/index.txt
serial = ca.db/serial
new_certs_dir = ca.db
default_md = sha256
policy = any
unique_subject = no
crlnumber = ca.db/crlnumber
crl_extensions = crl_ext
x509_extensions = v3
[ v3 ]
basicConstraints = CA:FALSE
[ crl_ext ]
authorityKeyIdentifier = keyid:always
[ any ]
commonName = supplied
[ leaf ]
subjectAltName = DNS:localhost,IP:127.0.0.1
basicConstraints = CA:FALSE
CNF
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout expired.key -out expired.csr 2>/dev/null
openssl ca -batch -config ca.db/ca.cnf -extensions leaf -cert ca.crt -keyfile ca.key -in expired.csr \
    -startdate 20150101000000Z -enddate 20150102000000Z -out expired.crt 2>/dev/null
# An expired client certificate, a revoked one, and the CA's CRL naming it
# (client-ca.crl, valid for 100 years); the intermediate's CRL, which
# revokes nothing.
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=expired client" \
    -keyout client-expired.key -out client-expired.csr 2>/dev/null
openssl ca -batch -config ca.db/ca.cnf -cert ca.crt -keyfile ca.key -in client-expired.csr \
    -startdate 20150101000000Z -enddate 20150102000000Z -out client-expired.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=revoked client" \
    -keyout client-revoked.key -out client-revoked.csr 2>/dev/null
openssl ca -batch -config ca.db/ca.cnf -cert ca.crt -keyfile ca.key -in client-revoked.csr \
    -days "$days" -out client-revoked.crt 2>/dev/null
openssl ca -batch -config ca.db/ca.cnf -cert ca.crt -keyfile ca.key -revoke client-revoked.crt 2>/dev/null
openssl ca -batch -config ca.db/ca.cnf -cert ca.crt -keyfile ca.key -gencrl -crldays "$days" -out client-ca.crl 2>/dev/null
: > ca.db/index.txt
openssl ca -batch -config ca.db/ca.cnf -cert int.crt -keyfile int.key -gencrl -crldays "$days" -out int.crl 2>/dev/null
rm -rf ca.db expired.csr client-expired.csr client-revoked.csr ca.srl ca2.srl int.srl

# Encrypted keys (ssl_password_file): the localhost ECDSA key under the
# passphrase "nowait secret", in each form OpenSSL writes; the password
# file's first line is wrong, its second right.
pass="pass:nowait secret"
openssl pkcs8 -topk8 -v2 aes-256-cbc -in localhost-ec.key -passout "$pass" -out enc-pkcs8.key
openssl ec -in localhost-ec.key -aes128 -passout "$pass" -out enc-aes128.key 2>/dev/null
openssl ec -in localhost-ec.key -aes256 -passout "$pass" -out enc-aes256.key 2>/dev/null
openssl ec -in localhost-ec.key -des3 -passout "$pass" -out enc-des3.key 2>/dev/null
openssl rsa -in localhost-rsa.key -traditional -aes256 -passout "$pass" -out enc-rsa-aes256.key 2>/dev/null
printf 'not this one\nnowait secret\n' > passwords.txt

# An RSA key that belongs to no certificate here (a mismatched pair).
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out stray.key 2>/dev/null

# nginx's ticket key files: 48 and 80 random bytes.
head -c 48 /dev/urandom > ticket48.key
head -c 80 /dev/urandom > ticket80.key
head -c 80 /dev/urandom > ticket80b.key

# The OCSP stapling fixtures, from the CA above.
bash make-ocsp.sh
# A client certificate that is a CA, from the CA above.
bash make-ca-leaf.sh
# TLS to upstreams' fixtures, from the CA above.
bash make-upstream.sh
echo "made $(ls | wc -l) files"
