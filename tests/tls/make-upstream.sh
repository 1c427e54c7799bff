#!/usr/bin/env bash
# Makes the fixtures of the proxy's TLS to upstreams (run by make-certs.sh,
# from its CA; committed): an intermediate CA under the test CA and a
# localhost certificate it issued, served with it (chain.crt: the
# certificate, then the CA); a localhost certificate the test CA revoked,
# with the CA's revocation list (ca.crl); the client key encrypted, and a
# passphrase file as nginx reads one. Valid for 100 years, as the rest.
set -euo pipefail
cd "$(dirname "$0")"
days=36500

# The intermediate CA, and the certificate it issued.
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=nowait test intermediate CA" -keyout int-ca.key -out int-ca.csr 2>/dev/null
printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n' > int-ca.ext
openssl x509 -req -in int-ca.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile int-ca.ext -out int-ca.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout chain.key -out chain.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' > chain.ext
openssl x509 -req -in chain.csr -CA int-ca.crt -CAkey int-ca.key -CAcreateserial -days "$days" \
    -extfile chain.ext -out chain-leaf.crt 2>/dev/null
cat chain-leaf.crt int-ca.crt > chain.crt
rm -f int-ca.csr int-ca.ext chain.csr chain.ext chain-leaf.crt int-ca.srl ca.srl

# Revoked: issued and revoked by the test CA, in its revocation list.
mkdir -p crl.db && : > crl.db/index.txt && echo 2000 > crl.db/serial && echo 1000 > crl.db/crlnumber
cat > crl.db/ca.cnf <<CNF
[ ca ]
default_ca = test
[ test ]
dir = crl.db
database = crl.db/index.txt
serial = crl.db/serial
crlnumber = crl.db/crlnumber
new_certs_dir = crl.db
default_md = sha256
default_crl_days = $days
policy = any
unique_subject = no
[ any ]
commonName = supplied
[ leaf ]
subjectAltName = DNS:localhost,IP:127.0.0.1
basicConstraints = CA:FALSE
keyUsage = digitalSignature
extendedKeyUsage = serverAuth
CNF
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout revoked.key -out revoked.csr 2>/dev/null
openssl ca -batch -config crl.db/ca.cnf -extensions leaf -cert ca.crt -keyfile ca.key \
    -in revoked.csr -days "$days" -out revoked.crt 2>/dev/null
openssl ca -batch -config crl.db/ca.cnf -cert ca.crt -keyfile ca.key -revoke revoked.crt 2>/dev/null
openssl ca -batch -config crl.db/ca.cnf -cert ca.crt -keyfile ca.key -gencrl -out ca.crl 2>/dev/null
rm -rf crl.db revoked.csr

# The client key encrypted (AES-256), and a passphrase file (a passphrase
# per line, the right one second).
printf 'wrong\nnowait-test\n' > password.txt
openssl pkey -in client.key -aes256 -passout pass:nowait-test -out client-enc.key 2>/dev/null
