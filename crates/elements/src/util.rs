//! Small helpers shared by elements.

use crate::{ConfigError, HandlerError};

/// Parses a handler value or reports it as a bad value.
pub fn parse_value<T: crate::FromArg>(name: &str, v: &str) -> Result<T, HandlerError> {
    T::from_arg(v.trim()).map_err(|e| HandlerError::BadValue(format!("{name}: {e}")))
}

/// Makes a configure error.
pub fn cfg_err(msg: impl Into<String>) -> ConfigError {
    ConfigError::new(msg)
}
