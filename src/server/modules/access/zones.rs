//! The `limit_req_zone` and `limit_conn_zone` tables: the process keeps
//! them by name across reloads ([`Registry`], held by `server::core::shared`), a
//! generation sees them with its own settings ([`Limits`], held by the
//! site). As nginx's shared zones: a reload keeps a zone's entries when its
//! name, kind and size stay; it refuses a zone whose key changed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::config::access_model::LimitZone;
use crate::config::model::HttpConf;
use crate::config::template::Template;

use super::{limit_conn, limit_req};

/// A request zone as one generation uses it.
#[derive(Debug)]
pub struct ReqZone {
    /// `rate=`, thousandths of a request per second.
    pub rate: u64,
    /// The key.
    pub key: Template,
    /// The key as written (for messages).
    pub key_source: String,
    /// The process's table.
    pub table: Arc<limit_req::SharedTable>,
}

/// A connection zone as one generation uses it.
#[derive(Debug)]
pub struct ConnZone {
    /// The key.
    pub key: Template,
    /// The key as written (for messages).
    pub key_source: String,
    /// The process's table.
    pub table: Arc<limit_conn::SharedTable>,
}

/// One generation's zones, by name.
#[derive(Debug, Default)]
pub struct Limits {
    /// `limit_req_zone`s.
    pub req: HashMap<String, ReqZone>,
    /// `limit_conn_zone`s.
    pub conn: HashMap<String, ConnZone>,
}

/// A table the process keeps.
#[derive(Debug, Clone)]
enum Table {
    Req(Arc<limit_req::SharedTable>),
    Conn(Arc<limit_conn::SharedTable>),
}

/// The process's zone tables, by name.
#[derive(Debug, Default)]
pub struct Registry {
    tables: Mutex<HashMap<String, Table>>,
}

/// nginx's message for a zone whose key a reload changed.
fn key_changed(directive: &str, z: &LimitZone, old: &str) -> String {
    format!(
        "{directive} \"{}\" uses the \"{}\" key while previously it used the \"{old}\" key",
        z.name, z.key_source
    )
}

impl Registry {
    /// The zones `http` declares, with the tables of the previous
    /// generation where they may be kept; tables no longer declared are
    /// let go. Nothing changes when the configuration is refused.
    pub fn limits_for(&self, http: &HttpConf) -> Result<Limits, String> {
        let mut all = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        let mut next: HashMap<String, Table> = HashMap::new();
        let mut limits = Limits::default();
        for z in &http.limit_req_zones {
            let table = match all.get(&z.name) {
                Some(Table::Req(t)) if t.key != z.key_source => {
                    return Err(key_changed("limit_req", z, &t.key));
                }
                Some(Table::Req(t)) if t.size == z.size => t.clone(),
                _ => Arc::new(limit_req::SharedTable::new(z.size, &z.key_source)),
            };
            next.insert(z.name.clone(), Table::Req(table.clone()));
            limits.req.insert(
                z.name.clone(),
                ReqZone {
                    rate: z.rate,
                    key: z.key.clone(),
                    key_source: z.key_source.clone(),
                    table,
                },
            );
        }
        for z in &http.limit_conn_zones {
            let table = match all.get(&z.name) {
                Some(Table::Conn(t)) if t.key != z.key_source => {
                    return Err(key_changed("limit_conn_zone", z, &t.key));
                }
                Some(Table::Conn(t)) if t.size == z.size => t.clone(),
                _ => Arc::new(limit_conn::SharedTable::new(z.size, &z.key_source)),
            };
            next.insert(z.name.clone(), Table::Conn(table.clone()));
            limits.conn.insert(
                z.name.clone(),
                ConnZone {
                    key: z.key.clone(),
                    key_source: z.key_source.clone(),
                    table,
                },
            );
        }
        *all = next;
        Ok(limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(zones: &[(&str, &str, u64)]) -> HttpConf {
        let mut h = HttpConf::default();
        for &(name, key, size) in zones {
            h.limit_req_zones.push(LimitZone {
                name: name.into(),
                key: Template::parse(key).unwrap(),
                key_source: key.into(),
                size,
                rate: 1000,
            });
        }
        h
    }

    #[test]
    fn a_reload_keeps_a_zone_of_the_same_key_and_size() {
        let r = Registry::default();
        let a = r.limits_for(&http(&[("one", "$uri", 1 << 20)])).unwrap();
        let b = r.limits_for(&http(&[("one", "$uri", 1 << 20)])).unwrap();
        assert!(Arc::ptr_eq(&a.req["one"].table, &b.req["one"].table));
        let c = r.limits_for(&http(&[("one", "$uri", 2 << 20)])).unwrap();
        assert!(!Arc::ptr_eq(&b.req["one"].table, &c.req["one"].table));
        assert_eq!(
            r.limits_for(&http(&[("one", "$host", 2 << 20)]))
                .unwrap_err(),
            "limit_req \"one\" uses the \"$host\" key while previously it used the \"$uri\" key"
        );
        // The refused configuration changed nothing.
        let d = r.limits_for(&http(&[("one", "$uri", 2 << 20)])).unwrap();
        assert!(Arc::ptr_eq(&c.req["one"].table, &d.req["one"].table));
    }
}
