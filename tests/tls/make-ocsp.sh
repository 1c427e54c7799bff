#!/usr/bin/env bash
# Makes the OCSP stapling fixtures from the test CA (ca.crt, ca.key, made
# by make-certs.sh, which runs this at its end; run it alone to remake only
# these):
# - ocsp-leaf: a localhost certificate whose Authority Information Access
#   names an OCSP responder at a fixed address (http://127.84.7.3:19347/,
#   a loopback address no other test listens on), and ocsp-chain.crt, the
#   same certificate followed by the CA (its issuer found in the chain);
# - ocsp-responder: a delegated responder (extendedKeyUsage OCSPSigning)
#   issued by the CA;
# - rogue-ca: a self-signed RSA CA nothing trusts, to sign bad responses;
# - ocsp-index.txt and ocsp-revoked.txt: the responder's database
#   (`openssl ocsp -index`) saying the leaf is good, or revoked;
# - ocsp-leaf.req: the request OpenSSL makes for the leaf (nginx's, with
#   no nonce), and ocsp-leaf.der: its answer signed by the CA, for
#   ssl_stapling_file;
# - ocsp-good.der, ocsp-revoked.der (signed by the CA), ocsp-delegated.der
#   (by the delegated responder), ocsp-rogue.der (by the rogue CA):
#   answers with a nextUpdate in 100 years, for the unit tests.
set -euo pipefail
cd "$(dirname "$0")"
days=36500
aia=http://127.84.7.3:19347/

openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout ocsp-leaf.key -out ocsp-leaf.csr 2>/dev/null
printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
    "keyUsage=digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
    "authorityInfoAccess=OCSP;URI:$aia" > ocsp-leaf.ext
openssl x509 -req -in ocsp-leaf.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile ocsp-leaf.ext -out ocsp-leaf.crt 2>/dev/null
cat ocsp-leaf.crt ca.crt > ocsp-chain.crt

openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=nowait test OCSP responder" -keyout ocsp-responder.key -out ocsp-responder.csr 2>/dev/null
printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=digitalSignature" \
    "extendedKeyUsage=OCSPSigning" > ocsp-responder.ext
openssl x509 -req -in ocsp-responder.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile ocsp-responder.ext -out ocsp-responder.crt 2>/dev/null

openssl req -x509 -newkey rsa:2048 -nodes -days "$days" -subj "/CN=rogue CA" \
    -keyout rogue-ca.key -out rogue-ca.crt 2>/dev/null

serial=$(openssl x509 -in ocsp-leaf.crt -noout -serial | cut -d= -f2)
printf 'V\t21261231235959Z\t\t%s\tunknown\t/CN=localhost\n' "$serial" > ocsp-index.txt
printf 'R\t21261231235959Z\t260101000000Z,keyCompromise\t%s\tunknown\t/CN=localhost\n' "$serial" > ocsp-revoked.txt

openssl ocsp -issuer ca.crt -cert ocsp-leaf.crt -no_nonce -reqout ocsp-leaf.req 2>/dev/null
openssl ocsp -index ocsp-index.txt -rsigner ca.crt -rkey ca.key -CA ca.crt \
    -reqin ocsp-leaf.req -respout ocsp-leaf.der >/dev/null 2>&1
answer() { # output index signer
    openssl ocsp -index "$2" -rsigner "$3.crt" -rkey "$3.key" -CA ca.crt -ndays "$days" \
        -reqin ocsp-leaf.req -respout "$1" >/dev/null 2>&1
}
answer ocsp-good.der ocsp-index.txt ca
answer ocsp-revoked.der ocsp-revoked.txt ca
answer ocsp-delegated.der ocsp-index.txt ocsp-responder
answer ocsp-rogue.der ocsp-index.txt rogue-ca
rm -f ocsp-leaf.csr ocsp-leaf.ext ocsp-responder.csr ocsp-responder.ext ca.srl
