//! The variables a configuration defines, evaluated for a request as their
//! nginx modules do: first what the request itself holds (a `set` value, a
//! named capture, a value computed earlier in the request), then the
//! definition: `map` (`ngx_http_map_variable`: the source string looked up
//! among keys, wildcards and expressions, the value expanded, kept for the
//! rest of the request unless `volatile`), `split_clients`
//! (`ngx_http_split_clients_variable`: MurmurHash2 of the string against
//! the parts' bounds, kept), a named capture no match has set yet (not
//! found), or a variable only `set` assigns (empty, with nginx's
//! `using uninitialized "x" variable` warning under
//! `uninitialized_variable_warn on`).
//!
//! Reading one may read others (a map's source or value); the depth is
//! bounded as nginx bounds it, so a map defined through itself ends with
//! nginx's `cycle while evaluating variable` instead of a stack overflow.

use std::sync::Arc;

use crate::config::map::Map;
use crate::config::model::{SplitClients, VarDef};
use crate::log::Level;
use crate::upstream::split;

use crate::server::core::request::Req;
use crate::server::core::vars::Response;

/// nginx's `ngx_http_variable_depth`: how deeply variables may be read
/// through one another.
pub const MAX_VARIABLE_DEPTH: u32 = 100;

impl Req<'_> {
    /// The value of the configuration-defined variable `name`; `None` is
    /// "not found". `resp` is the response once it is known (the access
    /// log and its `if=`): a map or split of `$status`, `$sent_http_*` or
    /// `$body_bytes_sent` reads them as the log line does, as nginx
    /// evaluates `if=` with every variable of the finished request.
    pub fn named(&self, name: &Arc<str>, resp: Option<Response<'_>>) -> Option<Vec<u8>> {
        if let Some(v) = self.user_var(name) {
            return Some(v);
        }
        let http = self.site.http()?;
        let def = *http.var_defs.get(name)?;
        let depth = self.var_depth.get();
        if depth >= MAX_VARIABLE_DEPTH {
            self.error_log().log(
                Level::Error,
                Some(self.conn_no),
                format_args!(
                    "cycle while evaluating variable \"{name}\"{}",
                    self.log_context()
                ),
            );
            return None;
        }
        self.var_depth.set(depth + 1);
        let value = match def {
            VarDef::Map(i) => Some(self.map_value(&http.maps[i], resp)),
            VarDef::Split(i) => Some(self.split_value(&http.split_clients[i], resp)),
            VarDef::Capture => None,
            VarDef::Set => {
                if self.conf.uninitialized_variable_warn {
                    self.error_log().log(
                        Level::Warn,
                        Some(self.conn_no),
                        format_args!(
                            "using uninitialized \"{name}\" variable{}",
                            self.log_context()
                        ),
                    );
                }
                Some(Vec::new())
            }
        };
        self.var_depth.set(depth);
        value
    }

    /// `map`: looks the source up and expands the value found.
    fn map_value(&self, m: &Map, resp: Option<Response<'_>>) -> Vec<u8> {
        let mut key = self.expand_with(&m.source, resp);
        if m.hostnames && key.last() == Some(&b'.') {
            key.pop();
        }
        let subject = String::from_utf8_lossy(&key);
        let found = m.find(&key, |re| self.regex_exec(re, &subject));
        let value = match m.value(found) {
            Some(t) => self.expand_with(t, resp),
            None => Vec::new(),
        };
        if !m.volatile {
            self.set_user_var(&m.var, value.clone());
        }
        value
    }

    /// `split_clients`: the part the hashed string falls in.
    fn split_value(&self, sc: &SplitClients, resp: Option<Response<'_>>) -> Vec<u8> {
        let key = self.expand_with(&sc.key, resp);
        let percents: Vec<u32> = sc.parts.iter().map(|(p, _)| *p).collect();
        let value = match split::split_index(&percents, &key) {
            Some(i) => sc.parts[i].1.as_bytes().to_vec(),
            None => Vec::new(),
        };
        self.set_user_var(&sc.var, value.clone());
        value
    }
}
