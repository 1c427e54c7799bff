#!/usr/bin/env bash
# Makes the TLS fixtures the tests use (committed; run again only to change
# them): a CA, server certificates for localhost (RSA-2048 and ECDSA P-256),
# example.com and other.test, an expired one, a client certificate, ticket
# key files in nginx's two sizes, the OCSP stapling fixtures
# (make-ocsp.sh) and those of TLS to upstreams (make-upstream.sh).
# Everything but the expired certificate is valid for 100 years, so the
# fixtures do not age.
set -euo pipefail
cd "$(dirname "$0")"
days=36500
ext() { printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n' "$1" "${2:-serverAuth}"; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
    -subj "/CN=nowait test CA" -keyout ca.key -out ca.crt 2>/dev/null

leaf() { # name key-kind subject san [usage]
    local name=$1 kind=$2 subj=$3 san=$4 usage=${5:-serverAuth}
    if [[ $kind == rsa ]]; then opt=(-newkey rsa:2048); else opt=(-newkey ec -pkeyopt ec_paramgen_curve:P-256); fi
    openssl req "${opt[@]}" -nodes -subj "$subj" -keyout "$name.key" -out "$name.csr" 2>/dev/null
    ext "$san" "$usage" > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
        -extfile "$name.ext" -out "$name.crt" 2>/dev/null
    rm -f "$name.csr" "$name.ext"
}
leaf localhost-rsa rsa "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
leaf localhost-ec ec "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
leaf example rsa "/CN=example.com" "DNS:example.com,DNS:www.example.com"
leaf other ec "/CN=other.test" "DNS:other.test"
leaf client ec "/C=XX/O=nowait tests/CN=client one" "email:client@example.com" clientAuth

# Expired: valid for one day, ten years ago (openssl ca sets the dates).
mkdir -p ca.db && : > ca.db/index.txt && echo 1000 > ca.db/serial
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
rm -rf ca.db expired.csr ca.srl

# An RSA key that belongs to no certificate here (a mismatched pair).
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out stray.key 2>/dev/null

# nginx's ticket key files: 48 and 80 random bytes.
head -c 48 /dev/urandom > ticket48.key
head -c 80 /dev/urandom > ticket80.key
head -c 80 /dev/urandom > ticket80b.key

# The OCSP stapling fixtures, from the CA above.
bash make-ocsp.sh
# TLS to upstreams' fixtures, from the CA above.
bash make-upstream.sh
echo "made $(ls | wc -l) files"
