//! `auth_basic`: HTTP Basic authentication against an htpasswd file, as
//! `ngx_http_auth_basic_module.c` does it: the credentials are read from
//! `Authorization` (`ngx_http_auth_basic_user`), the file is scanned
//! line by line for the user (`#` and CR start a comment line), and the
//! password is hashed with the stored value's scheme ([`super::crypt`]).
//!
//! The file is read through the file layer, in chunks, so a long file
//! neither waits on the loop (under `aio threads`) nor sits in memory
//! whole.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::http::request::RequestHead;
use crate::http::status::Status;
use crate::io::file::{FileError, FileLayer, Opened};
use crate::log::Level;

use super::base64;
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;

/// How much of the password file is read at a time.
pub const READ_CHUNK: usize = 64 * 1024;

/// The user and password of a request's `Authorization: Basic` field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// The user name (never empty, never holding `:`).
    pub user: Vec<u8>,
    /// The password.
    pub passwd: Vec<u8>,
}

/// `ngx_http_auth_basic_user`: the credentials, or `None` when the field
/// is missing, not Basic, not base64, or without `user:`.
pub fn credentials(head: &RequestHead) -> Option<Credentials> {
    credentials_of(head.header("authorization")?)
}

/// [`credentials`] from an `Authorization` value.
pub fn credentials_of(v: &[u8]) -> Option<Credentials> {
    const BASIC: &[u8] = b"Basic ";
    if v.len() < BASIC.len() || !v[..BASIC.len()].eq_ignore_ascii_case(BASIC) {
        return None;
    }
    let encoded = v[BASIC.len()..].trim_ascii_start();
    if encoded.is_empty() {
        return None;
    }
    let auth = base64::decode(encoded)?;
    let colon = auth.iter().position(|&c| c == b':')?;
    if colon == 0 {
        return None;
    }
    Some(Credentials {
        user: auth[..colon].to_vec(),
        passwd: auth[colon + 1..].to_vec(),
    })
}

/// Where the scan of the password file stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Matching the user name at the start of a line.
    Login,
    /// Collecting the password field.
    Passwd,
    /// Skipping to the end of the line.
    Skip,
}

/// The scan of a password file for one user, fed chunk by chunk
/// (`ngx_http_auth_basic_handler`'s state machine).
#[derive(Debug)]
pub struct Scan {
    /// The user followed by `:` (nginx compares the byte after the name
    /// in the decoded credentials, which is the `:`).
    login: Vec<u8>,
    user_len: usize,
    state: State,
    at: usize,
    passwd: Vec<u8>,
}

impl Scan {
    /// A scan for `user`.
    pub fn new(user: &[u8]) -> Scan {
        let mut login = user.to_vec();
        login.push(b':');
        Scan {
            login,
            user_len: user.len(),
            state: State::Login,
            at: 0,
            passwd: Vec::new(),
        }
    }

    /// Feeds the next bytes: `Some(stored)` once the user's password field
    /// is complete.
    pub fn feed(&mut self, chunk: &[u8]) -> Option<Vec<u8>> {
        for &c in chunk {
            match self.state {
                State::Login => {
                    if self.at == 0 {
                        if c == b'#' || c == b'\r' {
                            self.state = State::Skip;
                            continue;
                        }
                        if c == b'\n' {
                            continue;
                        }
                    }
                    if c != self.login[self.at] {
                        self.state = State::Skip;
                        continue;
                    }
                    if self.at == self.user_len {
                        self.state = State::Passwd;
                        self.passwd.clear();
                    }
                    self.at += 1;
                }
                State::Passwd => {
                    if c == b'\n' || c == b'\r' || c == b':' {
                        return Some(std::mem::take(&mut self.passwd));
                    }
                    self.passwd.push(c);
                }
                State::Skip => {
                    if c == b'\n' {
                        self.state = State::Login;
                        self.at = 0;
                    }
                }
            }
        }
        None
    }

    /// The end of the file: the password when the last line was the
    /// user's, without a newline.
    pub fn finish(self) -> Option<Vec<u8>> {
        (self.state == State::Passwd).then_some(self.passwd)
    }
}

/// The 401 reply with `WWW-Authenticate: Basic realm="REALM"`
/// (`ngx_http_auth_basic_set_realm`).
pub fn challenge(realm: &[u8]) -> Reply {
    let mut reply = Reply::special(Status::UNAUTHORIZED);
    reply.extra.push((
        "WWW-Authenticate".into(),
        format!("Basic realm=\"{}\"", String::from_utf8_lossy(realm)).into(),
    ));
    reply
}

/// `auth_basic_user_file`'s path: a relative value is taken from the
/// configuration's folder (nginx's `conf_prefix`).
pub fn user_file(site: &Site, value: &[u8]) -> PathBuf {
    let p = Path::new(std::ffi::OsStr::from_bytes(value));
    if p.is_absolute() {
        return p.to_path_buf();
    }
    let config = &site.config;
    let dir = config
        .conf_file
        .as_deref()
        .and_then(Path::parent)
        .unwrap_or(&config.prefix);
    dir.join(p)
}

/// What checking the password file concluded.
pub enum Checked {
    /// The password matches.
    Ok,
    /// Answer this (401 with the realm, 403, 500).
    Reply(Box<Reply>),
}

/// Reads `path` through `files` for the user of `creds` and compares the
/// password, logging as nginx does.
pub async fn check(
    r: &Req<'_>,
    files: FileLayer<'_>,
    path: &Path,
    creds: &Credentials,
    realm: &[u8],
) -> Checked {
    let log = |level: Level, msg: std::fmt::Arguments<'_>| {
        r.error_log().log(
            level,
            Some(r.conn_no),
            format_args!("{msg}{}", r.log_context()),
        );
    };
    let fail = |e: &FileError, level: Level, status: Status| {
        log(level, format_args!("{e}"));
        Checked::Reply(Box::new(Reply::special(status)))
    };
    let file = match files.open(path).await {
        Ok(Opened::Regular(f)) => f,
        Ok(Opened::Other(_)) => {
            // nginx opens a directory and fails reading it.
            log(
                Level::Crit,
                format_args!("pread() \"{}\" failed (21: Is a directory)", path.display()),
            );
            return Checked::Reply(Box::new(Reply::special(Status::INTERNAL_SERVER_ERROR)));
        }
        Err(e) if e.errno() == Some(libc::ENOENT) => {
            return fail(&e, Level::Error, Status::FORBIDDEN);
        }
        Err(e) => return fail(&e, Level::Crit, Status::INTERNAL_SERVER_ERROR),
    };
    let mut scan = Scan::new(&creds.user);
    let mut offset = 0u64;
    let stored = loop {
        let chunk = match files.read_at(&file, READ_CHUNK, offset).await {
            Ok(c) => c,
            Err(e) => return fail(&e, Level::Crit, Status::INTERNAL_SERVER_ERROR),
        };
        if let Some(p) = scan.feed(&chunk) {
            break Some(p);
        }
        if chunk.len() < READ_CHUNK {
            break scan.finish();
        }
        offset += chunk.len() as u64;
    };
    let user = String::from_utf8_lossy(&creds.user);
    let Some(stored) = stored else {
        log(
            Level::Error,
            format_args!("user \"{user}\" was not found in \"{}\"", path.display()),
        );
        return Checked::Reply(Box::new(challenge(realm)));
    };
    match super::crypt::crypt(&creds.passwd, &stored) {
        Ok(hashed) if hashed == stored => Checked::Ok,
        Ok(_) => {
            log(
                Level::Error,
                format_args!("user \"{user}\": password mismatch"),
            );
            Checked::Reply(Box::new(challenge(realm)))
        }
        Err(e) => {
            log(
                Level::Crit,
                format_args!(
                    "{}() failed ({})",
                    crate::sys::crypt::CRYPT_R,
                    crate::sys::error::errno_text(&e)
                ),
            );
            Checked::Reply(Box::new(Reply::special(Status::INTERNAL_SERVER_ERROR)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(file: &[u8], user: &[u8]) -> Option<Vec<u8>> {
        let mut s = Scan::new(user);
        for chunk in file.chunks(3) {
            if let Some(p) = s.feed(chunk) {
                return Some(p);
            }
        }
        s.finish()
    }

    #[test]
    fn finds_the_user_s_field() {
        let file = b"# comment\n\nalice:{PLAIN}a\nbob:{PLAIN}b:extra\nbo:x\ncarol:{PLAIN}c";
        assert_eq!(scan(file, b"alice").unwrap(), b"{PLAIN}a");
        assert_eq!(scan(file, b"bob").unwrap(), b"{PLAIN}b");
        assert_eq!(scan(file, b"bo").unwrap(), b"x");
        assert_eq!(scan(file, b"carol").unwrap(), b"{PLAIN}c", "no newline");
        assert_eq!(scan(file, b"al"), None);
        assert_eq!(scan(file, b"# comment"), None);
        assert_eq!(scan(b"\r\nx:y\r\n", b"x").unwrap(), b"y");
    }

    fn head(auth: &str) -> RequestHead {
        let raw = format!("GET / HTTP/1.0\r\nAuthorization: {auth}\r\n\r\n");
        crate::http::request::parse_head(raw.as_bytes())
            .unwrap()
            .unwrap()
            .0
    }

    #[test]
    fn credentials_as_ngx_http_auth_basic_user() {
        let c = credentials(&head("Basic dXNlcjpwYTpzcw==")).unwrap();
        assert_eq!(
            (c.user.as_slice(), c.passwd.as_slice()),
            (&b"user"[..], &b"pa:ss"[..])
        );
        assert!(credentials(&head("basic   dXNlcjpwYXNz")).is_some());
        assert_eq!(credentials(&head("Basic ")), None);
        assert_eq!(credentials(&head("Bearer dXNlcjpwYXNz")), None);
        // ":pass" has no user; "user" has no colon.
        assert_eq!(credentials(&head("Basic OnBhc3M=")), None);
        assert_eq!(credentials(&head("Basic dXNlcg==")), None);
    }
}
