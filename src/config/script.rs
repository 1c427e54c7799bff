//! The rewrite module's script as typed configuration: what `rewrite`,
//! `return`, `set`, `if` and `break` become once read (nginx's
//! `ngx_http_rewrite_module` compiles them into a code array; nowait keeps
//! them as a list of instructions, one per directive, in the order written).
//!
//! A server's script runs before a location is chosen, a location's when
//! the request enters it. An `if` holds the instructions of its block; in a
//! location it also owns an anonymous location (nginx's `noname` location)
//! whose settings are merged from the enclosing location, so that a true
//! condition can move the request into it.
//!
//! Running a script is the server's (`server::modules::rewrite`); this module only
//! describes it. Of all the instructions, only a [`Condition::File`] asks
//! the file system: the runner pauses a script there and nowhere else.

use std::sync::Arc;

use crate::config::regex::Regex;

use super::model::Location;
use super::template::{Template, Var};

/// One instruction of a rewrite script.
#[derive(Clone, Debug)]
pub enum RewriteOp {
    /// `return`: answer now.
    Return(Return),
    /// `rewrite regex replacement [flag]`.
    Rewrite(Box<Rewrite>),
    /// `set $variable value`.
    Set(SetVar),
    /// `if (condition) { … }`.
    If(Box<If>),
    /// `break`: stop the script, stay in the location.
    Break,
}

/// `return`.
#[derive(Clone, Debug)]
pub struct Return {
    /// The status; 444 closes the connection without a response.
    pub code: u16,
    /// The text (for non-redirects) or the URL (for 301, 302, 303, 307, 308).
    pub text: Option<Template>,
}

/// What a matching `rewrite` does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewriteFlag {
    /// No flag: the script goes on with the next instruction; the location
    /// is searched again after it (the URI changed).
    Continue,
    /// `last`: the script stops; the location is searched again.
    Last,
    /// `break`: the script stops; the request stays where it is.
    Break,
    /// `redirect` (302), `permanent` (301), or a replacement starting with
    /// `http://`, `https://` or `$scheme` (302): the reply is a redirect.
    Redirect(u16),
}

/// `rewrite regex replacement [last | break | redirect | permanent]`.
#[derive(Clone, Debug)]
pub struct Rewrite {
    /// The expression, matched against `$uri`.
    pub regex: Regex,
    /// The expression as written, for `rewrite_log`.
    pub pattern: String,
    /// The replacement: all of it for a redirect, else the part before its
    /// first literal `?` (the new URI).
    pub uri: Template,
    /// For an internal rewrite, the part after the first literal `?`: the
    /// new arguments (nginx's `sc.compile_args`).
    pub args: Option<Template>,
    /// What happens after a match.
    pub flag: RewriteFlag,
    /// Whether the request's arguments are appended (the replacement did
    /// not end with `?`).
    pub add_args: bool,
    /// Whether the replacement holds a literal `?`: a redirect then joins
    /// the old arguments with `&` rather than `?` (nginx's `sc.args`).
    pub args_in_text: bool,
}

/// What `set` assigns to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetTarget {
    /// A variable stored per request, lowercase: one the configuration
    /// defines, or a changeable built-in or family member (`$proxy_host`,
    /// `$http_x` …) whose reads then give the stored value, as in nginx.
    Named(Arc<str>),
    /// `$args`: replaces the request's arguments.
    Args,
    /// `$limit_rate`: the response's rate limit, parsed as a size.
    LimitRate,
}

/// `set $variable value`.
#[derive(Clone, Debug)]
pub struct SetVar {
    /// The variable.
    pub target: SetTarget,
    /// The value, evaluated when the instruction runs.
    pub value: Template,
}

/// A file test of an `if`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileTest {
    /// `-f`: a regular file.
    Plain,
    /// `-d`: a directory.
    Dir,
    /// `-e`: a file, a directory or a link.
    Exists,
    /// `-x`: executable by its owner.
    Exec,
}

/// The condition of an `if` (`ngx_http_rewrite_if_condition`).
#[derive(Clone, Debug)]
pub enum Condition {
    /// `($var)`: true unless empty or `0`.
    Var(Var),
    /// `($var = value)` (`equal`) or `($var != value)`.
    Compare {
        /// The variable compared.
        var: Var,
        /// What it is compared with.
        value: Template,
        /// `=` (true) or `!=` (false).
        equal: bool,
    },
    /// `($var ~ re)`, `~*`, `!~`, `!~*`: a match sets the captures.
    Match {
        /// The variable matched.
        var: Var,
        /// The expression (case-insensitive for `~*`).
        regex: Regex,
        /// The expression as written, for `rewrite_log`.
        pattern: String,
        /// `!~` or `!~*`.
        negative: bool,
    },
    /// `(-f path)` and the other file tests, `!` negating them.
    File {
        /// The path, evaluated per request.
        path: Template,
        /// What is tested.
        test: FileTest,
        /// `!-f`, `!-d`, `!-e`, `!-x`.
        negative: bool,
    },
}

/// `if (condition) { … }`.
#[derive(Clone, Debug)]
pub struct If {
    /// The condition.
    pub cond: Condition,
    /// The instructions of the block, run when the condition is true; the
    /// enclosing script then goes on after the block, as in nginx.
    pub script: Vec<RewriteOp>,
    /// In a location: the block's anonymous location (its settings merged
    /// from the enclosing location), which the request enters when the
    /// condition is true. `None` in a server, where an `if` holds rewrite
    /// instructions only.
    pub location: Option<Location>,
}
