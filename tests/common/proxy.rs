//! Configurations and requests for the proxy's black-box tests: one server
//! on `{port}` in front of scripted upstreams (see [`super::upstream`]).
//!
//! `UP` in a text given here stands for the first upstream's
//! `127.0.0.1:port`, so that a test reads like the configuration it means.

use super::conf::Conf;
use super::response::Response;
use super::server::Server;
use super::upstream::Upstream;

/// The configuration text: `http` directives (upstream blocks, log
/// formats) then one server holding `server`; `UP` is replaced by `up`'s
/// address.
pub fn conf(up: Option<&Upstream>, http: &str, server: &str) -> String {
    let text = Conf::http(&format!(
        "{http}\nserver {{\n listen 127.0.0.1:{{port}};\n server_name localhost;\n{server}\n}}\n"
    ))
    .render();
    match up {
        Some(up) => text.replace("UP", &up.addr().to_string()),
        None => text,
    }
}

/// The server under test (nowait, or nginx under `NOWAIT_TEST_NGINX=1`)
/// with [`conf`].
pub fn start(up: &Upstream, http: &str, server: &str) -> Server {
    Server::tested(&conf(Some(up), http, server))
}

/// `GET path` on a fresh connection (`Connection: close`), its response.
pub fn get(server: &Server, path: &str) -> Response {
    super::client::get(server.port(), path)
}

/// `raw` sent on a fresh connection, its first final response.
pub fn request(server: &Server, raw: &str) -> Response {
    super::client::request(server.port(), raw)
}
