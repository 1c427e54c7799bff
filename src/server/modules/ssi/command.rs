//! What each SSI command does, as nginx's handlers (`ngx_http_ssi_include`,
//! `_echo`, `_config`, `_set`, `_if`, `_else`, `_endif`, `_block`,
//! `_endblock`), and the checks nginx makes before calling one: the command
//! exists, its context (`elif` after `if` …), its parameters (known, not
//! repeated, the mandatory ones present). Inside a `block` every command
//! but `endblock` is kept as text; where output is off (a branch not
//! taken), only the `if` family and `endblock` run.

use bytes::Bytes;

use super::expr::{self, ADD_PREFIX, Condition, EvalError};
use super::parse::{MAX_PARAMS, lossy};
use super::{COND_ELSE, COND_IF, Captures, Encoding, Filter, Out, Wait};
use crate::server::core::subrequest::{self, Fallback, Options, Output};

/// `echo` without a value or `default`.
const NONE: &[u8] = b"(none)";

/// One parameter a command takes.
struct ParamSpec {
    /// Its name.
    name: &'static [u8],
    /// The command fails without it.
    mandatory: bool,
}

/// One command (nginx's `ngx_http_ssi_command_t`).
struct CommandSpec {
    /// Its name (matched exactly).
    name: &'static [u8],
    /// The parameters it takes.
    params: &'static [ParamSpec],
    /// [`COND_IF`]: only after `if`/`elif`; [`COND_ELSE`]: after `else` too.
    conditional: u8,
    /// Runs inside a block and where output is off (`endblock`).
    block: bool,
}

const fn p(name: &'static [u8], mandatory: bool) -> ParamSpec {
    ParamSpec { name, mandatory }
}

/// nginx's commands, with their parameters in its order.
const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: b"include",
        params: &[
            p(b"virtual", false),
            p(b"file", false),
            p(b"wait", false),
            p(b"set", false),
            p(b"stub", false),
        ],
        conditional: 0,
        block: false,
    },
    CommandSpec {
        name: b"echo",
        params: &[p(b"var", true), p(b"default", false), p(b"encoding", false)],
        conditional: 0,
        block: false,
    },
    CommandSpec {
        name: b"config",
        params: &[p(b"errmsg", false), p(b"timefmt", false)],
        conditional: 0,
        block: false,
    },
    CommandSpec {
        name: b"set",
        params: &[p(b"var", true), p(b"value", true)],
        conditional: 0,
        block: false,
    },
    CommandSpec {
        name: b"if",
        params: &[p(b"expr", true)],
        conditional: 0,
        block: false,
    },
    CommandSpec {
        name: b"elif",
        params: &[p(b"expr", true)],
        conditional: COND_IF,
        block: false,
    },
    CommandSpec {
        name: b"else",
        params: &[],
        conditional: COND_IF,
        block: false,
    },
    CommandSpec {
        name: b"endif",
        params: &[],
        conditional: COND_ELSE,
        block: false,
    },
    CommandSpec {
        name: b"block",
        params: &[p(b"name", true)],
        conditional: 0,
        block: false,
    },
    CommandSpec {
        name: b"endblock",
        params: &[],
        conditional: 0,
        block: true,
    },
];

/// A command's parameter values, by the index of its [`ParamSpec`].
type Values = Vec<Option<Vec<u8>>>;

impl<'r, 'a: 'r> Filter<'r, 'a> {
    /// Runs the command the parser has just read.
    pub(super) fn command(&mut self) {
        let name = self.parser.command().to_vec();
        let Some(cmd) = COMMANDS.iter().find(|c| c.name == name.as_slice()) else {
            if self.output {
                self.log(&format!("invalid SSI command: \"{}\"", lossy(&name)));
                self.ssi_error();
            }
            return;
        };
        if !self.output && !cmd.block {
            if self.block {
                self.keep_as_text(&name);
                return;
            }
            if cmd.conditional == 0 {
                return;
            }
        }
        if cmd.conditional != 0 && (self.conditional == 0 || self.conditional > cmd.conditional) {
            self.log(&format!(
                "invalid context of SSI command: \"{}\"",
                lossy(&name)
            ));
            self.ssi_error();
            return;
        }
        if self.parser.param_count() > MAX_PARAMS {
            self.log(&format!(
                "too many SSI command parameters: \"{}\"",
                lossy(&name)
            ));
            self.ssi_error();
            return;
        }
        let values = match self.values(cmd, &name) {
            Ok(v) => v,
            Err(msg) => {
                self.log(&msg);
                self.ssi_error();
                return;
            }
        };
        let done = match cmd.name {
            b"include" => self.include(&values),
            b"echo" => self.echo(&values),
            b"config" => self.config(&values),
            b"set" => self.set(&values),
            b"if" | b"elif" => self.cond_if(&name, &values),
            b"else" => {
                self.output = !self.output_chosen;
                self.conditional = COND_ELSE;
                Ok(())
            }
            b"endif" => {
                self.output = true;
                self.output_chosen = false;
                self.conditional = 0;
                Ok(())
            }
            b"block" => self.start_block(&values),
            _ => {
                // endblock
                self.output = true;
                self.block = false;
                Ok(())
            }
        };
        if let Err(EvalError(msg)) = done {
            if !msg.is_empty() {
                self.log(&msg);
            }
            self.ssi_error();
        }
    }

    /// A command inside a block, written back as text into the block.
    fn keep_as_text(&mut self, name: &[u8]) {
        let mut text = b"<!--#".to_vec();
        text.extend_from_slice(name);
        for prm in self.parser.params() {
            text.push(b' ');
            text.extend_from_slice(&prm.key);
            text.extend_from_slice(b"=\"");
            text.extend_from_slice(&prm.value);
            text.push(b'"');
        }
        text.extend_from_slice(b" -->");
        if let Some(bl) = self.shared.borrow_mut().blocks.last_mut() {
            bl.bufs.push(Bytes::from(text));
        }
    }

    /// The parameters by their spec, checked as nginx checks them.
    fn values(&self, cmd: &CommandSpec, name: &[u8]) -> Result<Values, String> {
        let mut values: Values = vec![None; cmd.params.len()];
        for prm in self.parser.params() {
            let Some(i) = cmd.params.iter().position(|s| s.name == prm.key.as_slice()) else {
                return Err(format!(
                    "invalid parameter name: \"{}\" in \"{}\" SSI command",
                    lossy(&prm.key),
                    lossy(name)
                ));
            };
            if values[i].is_some() {
                return Err(format!(
                    "duplicate \"{}\" parameter in \"{}\" SSI command",
                    lossy(&prm.key),
                    lossy(name)
                ));
            }
            values[i] = Some(prm.value.clone());
        }
        for (spec, v) in cmd.params.iter().zip(&values) {
            if spec.mandatory && v.is_none() {
                return Err(format!(
                    "mandatory \"{}\" parameter is absent in \"{}\" SSI command",
                    lossy(spec.name),
                    lossy(name)
                ));
            }
        }
        Ok(values)
    }

    /// A variable's value for SSI: a capture of the last `if` regex or a
    /// value `set` gave it, else the request's variable (`$date_local`
    /// and `$date_gmt` in this filter's `timefmt`). `None`: not found.
    pub(super) fn var(&self, name: &[u8]) -> Option<Vec<u8>> {
        if let Some(v) = self.shared.borrow().get(name) {
            return Some(v);
        }
        match name {
            b"date_local" => return super::date_variable(&self.timefmt, false),
            b"date_gmt" => return super::date_variable(&self.timefmt, true),
            _ => {}
        }
        let name = std::str::from_utf8(name).ok()?;
        let var = crate::config::vars::Var::from_name(name);
        self.r.var(&var, None).map(|v| v.into_owned())
    }

    /// `ngx_http_ssi_evaluate_string` for this request.
    fn evaluate(&self, text: &[u8], flags: u8) -> Result<Vec<u8>, EvalError> {
        let uri = self.r.uri.as_bytes();
        expr::evaluate(text, flags, uri, &mut |name| self.var(name))
    }

    /// `include virtual=… | file=… [wait=yes|no] [set=…] [stub=…]`.
    fn include(&mut self, v: &Values) -> Result<(), EvalError> {
        let [virt, file, wait, set, stub] = [&v[0], &v[1], &v[2], &v[3], &v[4]];
        let fail = |msg: String| Err(EvalError(msg));
        if let (Some(u), Some(f)) = (virt, file) {
            return fail(format!(
                "inclusion may be either virtual=\"{}\" or file=\"{}\"",
                lossy(u),
                lossy(f)
            ));
        }
        if virt.is_none() && file.is_none() {
            return fail("no parameter in \"include\" SSI command".into());
        }
        if set.is_some() && stub.is_some() {
            return fail(
                "\"set\" and \"stub\" cannot be used together in \"include\" SSI command".into(),
            );
        }
        let mut waited = false;
        if let Some(w) = wait {
            if virt.is_none() {
                return fail(format!(
                    "\"wait\" cannot be used with file=\"{}\"",
                    lossy(file.as_deref().unwrap_or_default())
                ));
            }
            if w.eq_ignore_ascii_case(b"yes") {
                waited = true;
            } else if !w.eq_ignore_ascii_case(b"no") {
                return fail(format!(
                    "invalid value \"{}\" in the \"wait\" parameter",
                    lossy(w)
                ));
            }
        }
        let raw = match (virt, file) {
            (Some(u), _) => u,
            (None, Some(f)) => {
                waited = true;
                f
            }
            (None, None) => return fail(String::new()),
        };
        let uri = self.evaluate(raw, ADD_PREFIX)?;
        let (path, args) = match crate::http::unsafe_uri::parse(&uri) {
            Ok(split) => split,
            Err(unsafe_uri) => {
                return fail(format!(
                    "unsafe URI \"{}\" was detected",
                    lossy(&unsafe_uri.0)
                ));
            }
        };
        let mut fallback = None;
        if let Some(stub) = stub {
            let shared = self.shared.borrow();
            let Some(bl) = shared.blocks.iter().find(|b| &b.name == stub) else {
                drop(shared);
                return fail(format!(
                    "\"stub\"=\"{}\" for \"include\" not found",
                    lossy(stub)
                ));
            };
            fallback = Some(Fallback {
                body: bl.bufs.clone(),
                content_type: self.content_type.clone(),
            });
        }
        let memory_var = set.as_ref().map(|s| {
            let name = s.to_ascii_lowercase();
            // The variable exists (empty) from here on, whatever follows.
            let mut shared = self.shared.borrow_mut();
            if shared.get(&name).is_none() {
                shared.set(&name, Vec::new());
            }
            name
        });
        let output = if memory_var.is_some() {
            Output::Memory
        } else {
            Output::Stream
        };
        let sub = subrequest::start(
            self.env,
            self.r,
            String::from_utf8_lossy(&path).into_owned(),
            args.map(|a| String::from_utf8_lossy(&a).into_owned()),
            self.shared.clone(),
            Options { output, fallback },
        );
        let Some(sub) = sub else {
            return fail(String::new());
        };
        if let Some(var) = memory_var {
            self.wait = Some(Wait::Memory { sub, var });
            return Ok(());
        }
        let id = self.next_sub;
        self.next_sub += 1;
        self.queue.push_back(Out::Sub(id, sub));
        if waited {
            self.wait = Some(Wait::Queued(id));
        }
        Ok(())
    }

    /// `echo var=… [default=…] [encoding=none|url|entity]`.
    fn echo(&mut self, v: &Values) -> Result<(), EvalError> {
        let name = v[0].as_deref().unwrap_or_default().to_ascii_lowercase();
        let value = match self.var(&name) {
            Some(val) => val,
            None => match &v[1] {
                Some(d) => d.clone(),
                None => NONE.to_vec(),
            },
        };
        if value.is_empty() {
            return Ok(());
        }
        if let Some(enc) = &v[2] {
            match enc.as_slice() {
                b"none" => self.encoding = Encoding::None,
                b"url" => self.encoding = Encoding::Url,
                b"entity" => self.encoding = Encoding::Entity,
                _ => self.log(&format!(
                    "unknown encoding \"{}\" in the \"echo\" command",
                    lossy(enc)
                )),
            }
        }
        let out = match self.encoding {
            Encoding::None => value,
            Encoding::Url => expr::url_encode(&value),
            Encoding::Entity => expr::entity_encode(&value),
        };
        self.push(Bytes::from(out));
        Ok(())
    }

    /// `config [errmsg=…] [timefmt=…]`.
    fn config(&mut self, v: &Values) -> Result<(), EvalError> {
        if let Some(t) = &v[1] {
            self.timefmt = t.clone();
        }
        if let Some(e) = &v[0] {
            self.errmsg = e.clone();
        }
        Ok(())
    }

    /// `set var=… value=…`.
    fn set(&mut self, v: &Values) -> Result<(), EvalError> {
        let value = self.evaluate(v[1].as_deref().unwrap_or_default(), 0)?;
        let name = v[0].as_deref().unwrap_or_default().to_ascii_lowercase();
        self.shared.borrow_mut().set(&name, value);
        Ok(())
    }

    /// `if expr=…` and `elif expr=…`.
    fn cond_if(&mut self, name: &[u8], v: &Values) -> Result<(), EvalError> {
        if name == b"if" && self.conditional != 0 {
            return Err(EvalError(
                "the \"if\" command inside the \"if\" command".into(),
            ));
        }
        if self.output_chosen {
            self.output = false;
            return Ok(());
        }
        let text = v[0].as_deref().unwrap_or_default();
        let (left, rest) = expr::condition(text);
        let left = self.evaluate(&left, 0)?;
        let taken = match rest? {
            Condition::Truthy => !left.is_empty(),
            Condition::Compare {
                right,
                negative,
                regex,
            } => {
                let right = self.evaluate(&right, 0)?;
                let equal = if regex {
                    self.regex_match(&right, &left)?
                } else {
                    left == right
                };
                equal != negative
            }
        };
        self.output = taken;
        if taken {
            self.output_chosen = true;
        }
        self.conditional = COND_IF;
        Ok(())
    }

    /// Matches `subject` against `pattern`; a match sets the captures
    /// (`$1` …) and named captures (as `set` variables).
    fn regex_match(&mut self, pattern: &[u8], subject: &[u8]) -> Result<bool, EvalError> {
        let re = crate::config::regex::compile_bytes(&String::from_utf8_lossy(pattern))
            .map_err(EvalError)?;
        let Some(caps) = re.captures(subject) else {
            return Ok(false);
        };
        // PCRE's count: up to the last group that took part.
        let count = (0..caps.len())
            .rev()
            .find(|&i| caps.get(i).is_some())
            .map_or(1, |i| i + 1);
        let groups = (0..count)
            .map(|i| caps.get(i).map(|m| (m.start(), m.end())))
            .collect();
        let mut shared = self.shared.borrow_mut();
        for name in re.capture_names().flatten() {
            let value = caps
                .name(name)
                .map_or(Vec::new(), |m| m.as_bytes().to_vec());
            shared.set(name.to_ascii_lowercase().as_bytes(), value);
        }
        shared.captures = Some(Captures {
            subject: subject.to_vec(),
            groups,
        });
        Ok(true)
    }

    /// `block name=…`.
    fn start_block(&mut self, v: &Values) -> Result<(), EvalError> {
        let name = v[0].clone().unwrap_or_default();
        self.shared.borrow_mut().blocks.push(super::Block {
            name,
            bufs: Vec::new(),
        });
        self.output = false;
        self.block = true;
        Ok(())
    }
}
