//! How the caller asks: what to do with unknown fields, and which version to convert to.

use std::fmt;
use std::str::FromStr;

use super::report::{ErrorKind, SchemeError, Warning};

/// What to do with fields that the version's schema does not have, like kube-apiserver's
/// `fieldValidation` parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownFields {
    /// Drop them silently.
    Ignore,
    /// Drop them and report each field path as a warning.
    #[default]
    Warn,
    /// Fail, naming every unknown field.
    Strict,
}

impl UnknownFields {
    /// Drops, reports (into `warnings`) or refuses `fields` (unknown or repeated), as this
    /// mode says.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownFields`] in `Strict` mode, naming every field.
    pub fn apply(
        self,
        fields: Vec<Warning>,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SchemeError> {
        match self {
            UnknownFields::Ignore => Ok(()),
            UnknownFields::Warn => {
                warnings.extend(fields);
                Ok(())
            }
            UnknownFields::Strict if fields.is_empty() => Ok(()),
            UnknownFields::Strict => {
                let fields: Vec<String> = fields.iter().map(Warning::to_string).collect();
                Err(SchemeError::new(
                    ErrorKind::UnknownFields,
                    "",
                    format!("strict decoding error: {}", fields.join(", ")),
                ))
            }
        }
    }
}

/// The version to convert to: `group/version`, or a bare version applied to each object's own group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The group, when given.
    pub group: Option<String>,
    /// The version.
    pub version: String,
}

impl FromStr for Target {
    type Err = SchemeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || {
            SchemeError::new(
                ErrorKind::UnknownVersion,
                "",
                format!("invalid target version {s:?}: expected VERSION or GROUP/VERSION"),
            )
        };
        let (group, version) = match s.split_once('/') {
            Some((group, version)) if !group.is_empty() => (Some(group.to_owned()), version),
            Some(_) => return Err(invalid()),
            None => (None, s),
        };
        if version.is_empty() || version.contains('/') {
            return Err(invalid());
        }
        Ok(Target {
            group,
            version: version.to_owned(),
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.group {
            Some(group) => write!(f, "{group}/{}", self.version),
            None => f.write_str(&self.version),
        }
    }
}
