//! Every raw system call nowait makes, behind safe wrappers.
//!
//! This is the one module allowed `unsafe`; each block states its contract in a
//! `// SAFETY:` comment. Wrappers return [`std::io::Error`] carrying errno so
//! callers can log which call failed on which path.

#![allow(unsafe_code)]
pub mod ids;
