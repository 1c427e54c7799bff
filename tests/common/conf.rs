//! Configuration texts for the serving tests: the main and `events`
//! sections every test needs around the `http` block it is about.
//!
//! The result still holds the [`Server`](super::Server) placeholders
//! (`{port}`, `{prefix}`); `{root}` is substituted here when given.

use std::path::Path;

/// nginx's temporary directories, kept in the prefix; nowait drops the
/// lines of modules it does not have (see [`Server`](super::Server)).
const NGINX_TEMP_PATHS: &str = " client_body_temp_path client_body_temp;
 proxy_temp_path proxy_temp; # nginx only
 fastcgi_temp_path fastcgi_temp; # nginx only
 uwsgi_temp_path uwsgi_temp; # nginx only
 scgi_temp_path scgi_temp; # nginx only
";

/// A configuration being put together; [`Conf::render`] makes the text.
#[derive(Clone, Debug)]
pub struct Conf {
    /// Main-context directives besides the defaults below.
    main: String,
    /// The inside of `events {}`.
    events: String,
    /// The inside of `http {}` after the defaults below.
    http: String,
    /// Substituted for `{root}`.
    root: Option<String>,
}

impl Conf {
    /// A configuration whose `http` block holds `http` (servers included)
    /// after `include mime.types; default_type application/octet-stream;
    /// access_log off;`. Main context: `worker_processes 1; error_log
    /// stderr; pid nginx.pid;`; events: `worker_connections 64;`.
    pub fn http(http: &str) -> Conf {
        Conf {
            main: String::new(),
            events: "worker_connections 64;".into(),
            http: http.into(),
            root: None,
        }
    }

    /// A configuration with one `server` listening on `{port}`, holding
    /// `server` (root, locations…).
    pub fn server(server: &str) -> Conf {
        Conf::http(&format!(
            "server {{\n listen 127.0.0.1:{{port}};\n server_name localhost;\n{server}\n}}\n"
        ))
    }

    /// Adds main-context directives (`worker_processes` given here wins).
    pub fn main(mut self, main: &str) -> Conf {
        self.main.push_str(main);
        self.main.push('\n');
        self
    }

    /// Replaces the inside of `events {}`.
    pub fn events(mut self, events: &str) -> Conf {
        self.events = events.into();
        self
    }

    /// Substitutes `{root}` with `root` when rendering.
    pub fn root(mut self, root: &Path) -> Conf {
        self.root = Some(root.to_string_lossy().into_owned());
        self
    }

    /// The configuration text.
    pub fn render(&self) -> String {
        let workers = if self.main.contains("worker_processes") {
            ""
        } else {
            "worker_processes 1;\n"
        };
        let text = format!(
            "{workers}{main}error_log stderr;\npid nginx.pid;\n\
             events {{\n{events}\n}}\n\
             http {{\n include mime.types;\n default_type application/octet-stream;\n \
             access_log off;\n{NGINX_TEMP_PATHS}{http}\n}}\n",
            main = self.main,
            events = self.events,
            http = self.http,
        );
        match &self.root {
            Some(r) => text.replace("{root}", r),
            None => text,
        }
    }
}
