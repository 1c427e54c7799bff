#!/usr/bin/env bash
# Makes the version 1 fixtures (committed; run again only to change them):
# certificates and CRLs made the way nginx's own tests make theirs, with
# `openssl req -x509` and `openssl x509 -req` without extensions (X.509 v1
# certificates) and `openssl ca -gencrl` without CRL extensions (v1 CRLs),
# which webpki refuses and OpenSSL accepts.
#
# - root: a v1 self-signed root; leaf: a v1 certificate for localhost it
#   signed; int: a v3 CA it signed, end: a v1 certificate int signed;
#   self: a v1 self-signed certificate for localhost.
# - root.crl: root's list, revoking leaf; root-empty.crl: root's list,
#   revoking nothing; int.crl: int's list, revoking nothing.
# Everything is valid for 100 years, so the fixtures do not age.
set -euo pipefail
cd "$(dirname "$0")/v1"
days=36500
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '[ req ]\ndefault_bits = 2048\nencrypt_key = no\ndistinguished_name = dn\n[ dn ]\n' > "$work/req.conf"
printf 'basicConstraints=critical,CA:TRUE\n' > "$work/ca.ext"

for name in root self; do
    cn=$name; [[ $name == self ]] && cn=localhost
    openssl req -x509 -new -config "$work/req.conf" -days "$days" -subj "/CN=$cn/" \
        -out "$name.crt" -keyout "$name.key" 2>/dev/null
done
sign() { # name cn issuer [extfile]
    openssl req -new -config "$work/req.conf" -subj "/CN=$2/" -out "$work/$1.csr" -keyout "$1.key" 2>/dev/null
    openssl x509 -req -in "$work/$1.csr" -CA "$3.crt" -CAkey "$3.key" -CAcreateserial \
        -CAserial "$work/serial" -days "$days" ${4:+-extfile "$4"} -out "$1.crt" 2>/dev/null
}
sign leaf localhost root
sign int int root "$work/ca.ext"
sign end end int

gencrl() { # ca out [revoke]
    : > "$work/index"
    printf '[ ca ]\ndefault_ca = my\n[ my ]\ndatabase = %s\ndefault_md = sha256\ndefault_crl_days = %s\n' \
        "$work/index" "$days" > "$work/ca.conf"
    if [[ -n ${3:-} ]]; then
        openssl ca -config "$work/ca.conf" -keyfile "$1.key" -cert "$1.crt" -revoke "$3" 2>/dev/null
    fi
    openssl ca -gencrl -config "$work/ca.conf" -keyfile "$1.key" -cert "$1.crt" -out "$2" 2>/dev/null
}
gencrl root root.crl leaf.crt
gencrl root root-empty.crl
gencrl int int.crl
