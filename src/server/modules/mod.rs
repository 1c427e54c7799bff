//! nginx's modules, one file or folder each, as `src/http/modules`.
//!
//! - [`access`]: between location and content: `realip`, `limit_req`,
//!   `limit_conn`, `allow`/`deny`, `auth_basic`, `satisfy`, `secure_link`.
//! - [`rewrite`]: the rewrite module's scripts (`rewrite`, `return`, `set`,
//!   `if`, `break`).
//! - [`try_files`]: the precontent phase.
//! - [`static_file`]: URI → file, index, redirects, conditionals,
//!   `gzip_static`; [`autoindex`] directory listings.
//! - [`stub_status`]: the `stub_status` and `empty_gif` handlers.
//! - [`status_page`]: `nowait_status`: Prometheus text, the live page, its
//!   JSON; [`status_ring`] the sampler that fills the live page's ring.
//! - [`headers_filter`]: `expires`, `add_header`, `add_trailer` on a reply.
//! - [`filter`]: the output filters between a reply and its destination
//!   (gunzip, charset, gzip, range), with [`ssi`], [`sub_filter`],
//!   [`addition`].
//! - [`access_log`]: the log phase: access log lines.

pub mod access;
pub mod access_log;
pub mod addition;
pub mod autoindex;
pub mod filter;
pub mod headers_filter;
pub mod rewrite;
pub mod ssi;
pub mod static_file;
pub mod status_page;
pub mod status_ring;
pub mod stub_status;
pub mod sub_filter;
pub mod try_files;
