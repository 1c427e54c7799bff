#!/usr/bin/env bash
# A client certificate that is itself a CA (basicConstraints critical
# CA:TRUE, no key usage), issued by ca.crt: what nginx's tests (ssl_ocsp.t)
# give their clients. OpenSSL takes it as a client's own; run from
# make-certs.sh, after the CA.
set -euo pipefail
cd "$(dirname "$0")"
days=36500
ext=$(mktemp)
printf 'basicConstraints = critical,CA:TRUE\n' > "$ext"
openssl req -new -newkey rsa:2048 -nodes -subj "/CN=client that is a CA" \
    -keyout client-ca-leaf.key -out client-ca-leaf.csr 2>/dev/null
openssl x509 -req -in client-ca-leaf.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
    -days "$days" -extfile "$ext" -out client-ca-leaf.crt 2>/dev/null
rm -f client-ca-leaf.csr ca.srl "$ext"
