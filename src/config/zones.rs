//! The shared-memory zones a configuration declares (`zone` in `upstream`,
//! `keys_zone=` of `proxy_cache_path`), checked as nginx's
//! `ngx_shared_memory_add` checks them: one name, one use, one size.
//!
//! This only keeps names and sizes; it allocates nothing.

/// What a zone is for (nginx's zone tag: the module that declared it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneUse {
    /// An upstream group's `zone`.
    Upstream,
    /// A `proxy_cache_path` `keys_zone`.
    ProxyCache,
    /// A `limit_req_zone`.
    LimitReq,
    /// A `limit_conn_zone`.
    LimitConn,
    /// An `ssl_session_cache shared:` zone.
    SslSession,
    /// An `ssl_ocsp_cache shared:` zone.
    SslOcsp,
}

/// One declared zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zone {
    /// Its name.
    pub name: String,
    /// Its size; 0 until some declaration gives one.
    pub size: u64,
    /// What it is for.
    pub used_for: ZoneUse,
}

/// Every zone declared so far, in order.
#[derive(Debug, Default)]
pub struct Zones {
    /// The zones.
    pub list: Vec<Zone>,
}

impl Zones {
    /// Declares `name` (size 0: "whatever size another declaration gives"),
    /// or joins the zone of that name. Returns whether the zone existed.
    pub fn add(&mut self, name: &str, size: u64, used_for: ZoneUse) -> Result<bool, String> {
        let Some(z) = self.list.iter_mut().find(|z| z.name == name) else {
            self.list.push(Zone {
                name: name.to_string(),
                size,
                used_for,
            });
            return Ok(false);
        };
        if z.used_for != used_for {
            return Err(format!(
                "the shared memory zone \"{name}\" is already declared for a different use"
            ));
        }
        if z.size == 0 {
            z.size = size;
        }
        if size != 0 && size != z.size {
            return Err(format!(
                "the size {size} of shared memory zone \"{name}\" conflicts with already declared size {}",
                z.size
            ));
        }
        Ok(true)
    }

    /// The zones no declaration gave a size (nginx refuses them at start-up).
    pub fn without_size(&self) -> impl Iterator<Item = &Zone> + '_ {
        self.list.iter().filter(|z| z.size == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_name_one_use_one_size() {
        let mut z = Zones::default();
        assert_eq!(z.add("a", 0, ZoneUse::Upstream), Ok(false));
        assert_eq!(z.without_size().count(), 1);
        assert_eq!(z.add("a", 65536, ZoneUse::Upstream), Ok(true));
        assert_eq!(z.without_size().count(), 0);
        assert_eq!(z.add("a", 0, ZoneUse::Upstream), Ok(true));
        assert_eq!(
            z.add("a", 131072, ZoneUse::Upstream),
            Err("the size 131072 of shared memory zone \"a\" conflicts with already declared size 65536".into())
        );
        assert_eq!(
            z.add("a", 65536, ZoneUse::ProxyCache),
            Err("the shared memory zone \"a\" is already declared for a different use".into())
        );
    }
}
