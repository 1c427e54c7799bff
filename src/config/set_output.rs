//! Setters for the core module's output directives that body filters and
//! subrequests rely on: `output_buffers`, `postpone_output`,
//! `subrequest_output_buffer_size`.

use super::build::{Builder, Scope};
use super::set_proxy::{ls, not_set};
use super::slot;
use super::syntax::Directive;

/// `output_buffers number size;` (`ngx_conf_set_bufs_slot`).
pub fn output_buffers(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.output_buffers, d)?;
    set.output_buffers = Some(slot::bufs(d)?);
    Ok(())
}

/// `postpone_output size;`
pub fn postpone_output(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.postpone_output, d)?;
    set.postpone_output = Some(slot::size(d, 0)?);
    Ok(())
}

/// `subrequest_output_buffer_size size;`
pub fn subrequest_output_buffer_size(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.subrequest_output_buffer_size, d)?;
    set.subrequest_output_buffer_size = Some(slot::size(d, 0)?);
    Ok(())
}
