//! TLS machinery that knows nothing of HTTP: OpenSSL's cipher strings and
//! group lists read as nginx hands them to OpenSSL, and the names nginx
//! prints for ciphers, groups and protocol versions. Pure: no I/O and no
//! TLS library's types, only IANA codes and OpenSSL's names.

pub mod ciphers;
pub mod groups;
