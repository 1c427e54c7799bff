//! An ACME client (RFC 8555) as nginx's ACME module (nginx/nginx-acme)
//! runs one: for each `acme_issuer`, an account and the orders of the
//! servers that name it (`acme_certificate`), answered by HTTP-01 on
//! nowait's own servers, their certificates kept under `state_path` and
//! renewed before they expire.
//!
//! - [`service`]: the issuers' threads, owned by the process.
//! - [`protocol`]: the exchanges with the ACME server.
//! - [`https`]: its HTTP over rustls, blocking, on those threads only.
//! - [`jws`], [`keys`], [`csr`]: signed requests, keys, the CSR.
//! - [`store`]: the certificates and HTTP-01 tokens the serving threads
//!   read from memory.
//! - [`state`], [`schedule`]: the state directory, the renewal schedule.
//!
//! What this module must not do: run on a loop, or be called by one for
//! anything but [`store`]'s reads.

pub mod csr;
pub mod https;
pub mod jws;
pub mod keys;
pub mod protocol;
pub mod schedule;
pub mod service;
pub mod state;
pub mod store;
