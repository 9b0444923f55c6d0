//! What names a kind or a resource, as apimachinery's `schema` package names it: a group and
//! version ([`GroupVersion`]), with a kind ([`GroupVersionKind`]) or a resource
//! ([`GroupVersionResource`]), and a group's resource in any version ([`GroupResource`]).
//!
//! The core group is the empty one: its objects' `apiVersion` is the version alone (`v1`) and
//! it is served under `/api`, every other group under `/apis`.
//!
//! ```
//! use apfkit_runtime::identity::{GroupVersion, GroupVersionKind};
//!
//! let core = GroupVersion::parse("v1");
//! assert_eq!(core.group, "");
//! assert_eq!(core.api_version(), "v1");
//! assert_eq!(core.api_root(), "api/v1");
//!
//! let schema = GroupVersionKind::from_static("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema");
//! assert_eq!(schema.api_version(), "flowcontrol.apiserver.k8s.io/v1");
//! assert_eq!(schema.group_version().api_root(), "apis/flowcontrol.apiserver.k8s.io/v1");
//! ```

use std::borrow::Cow;
use std::fmt;

/// A name in an identity: borrowed for kinds known when the program is built, owned for those
/// read at run time.
pub type Name = Cow<'static, str>;

/// An `apiVersion` split at its last slash: (group, version), the group empty for a version
/// alone (`v1`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

/// A group and a version of it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersion {
    /// The group, empty for the core group.
    pub group: Name,
    /// The version.
    pub version: Name,
}

impl GroupVersion {
    /// A group-version known when the program is built.
    pub const fn from_static(group: &'static str, version: &'static str) -> Self {
        GroupVersion {
            group: Cow::Borrowed(group),
            version: Cow::Borrowed(version),
        }
    }

    /// A group-version.
    pub fn new(group: impl Into<Name>, version: impl Into<Name>) -> Self {
        GroupVersion {
            group: group.into(),
            version: version.into(),
        }
    }

    /// The group-version an object's `apiVersion` names.
    pub fn parse(api_version: &str) -> Self {
        let (group, version) = split_api_version(api_version);
        GroupVersion::new(group.to_owned(), version.to_owned())
    }

    /// An object's `apiVersion`: `group/version`, or the version alone in the core group.
    pub fn api_version(&self) -> String {
        self.to_string()
    }

    /// Where the group-version is served, without the leading slash: `apis/GROUP/VERSION`, or
    /// `api/VERSION` for the core group.
    pub fn api_root(&self) -> String {
        if self.group.is_empty() {
            format!("api/{}", self.version)
        } else {
            format!("apis/{}/{}", self.group, self.version)
        }
    }

    /// The kind `kind` of this group-version.
    pub fn with_kind(self, kind: impl Into<Name>) -> GroupVersionKind {
        GroupVersionKind {
            group: self.group,
            version: self.version,
            kind: kind.into(),
        }
    }

    /// The resource `resource` of this group-version.
    pub fn with_resource(self, resource: impl Into<Name>) -> GroupVersionResource {
        GroupVersionResource {
            group: self.group,
            version: self.version,
            resource: resource.into(),
        }
    }
}

/// `group/version`, or the version alone in the core group: an object's `apiVersion`.
impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.version)
        } else {
            write!(f, "{}/{}", self.group, self.version)
        }
    }
}

/// A kind in a version of a group.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionKind {
    /// The group, empty for the core group.
    pub group: Name,
    /// The version.
    pub version: Name,
    /// The kind.
    pub kind: Name,
}

impl GroupVersionKind {
    /// A kind known when the program is built.
    pub const fn from_static(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
    ) -> Self {
        GroupVersionKind {
            group: Cow::Borrowed(group),
            version: Cow::Borrowed(version),
            kind: Cow::Borrowed(kind),
        }
    }

    /// A kind.
    pub fn new(group: impl Into<Name>, version: impl Into<Name>, kind: impl Into<Name>) -> Self {
        GroupVersion::new(group, version).with_kind(kind)
    }

    /// The kind's group-version.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion {
            group: self.group.clone(),
            version: self.version.clone(),
        }
    }

    /// The `apiVersion` of the kind's objects.
    pub fn api_version(&self) -> String {
        self.group_version().api_version()
    }
}

/// `group/version, Kind=kind`, as apimachinery's `GroupVersionKind.String` prints it (the
/// slash kept in the core group: `/v1, Kind=Service`, unlike an `apiVersion`).
impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// A resource in a version of a group.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionResource {
    /// The group, empty for the core group.
    pub group: Name,
    /// The version.
    pub version: Name,
    /// The resource: the plural name in URLs.
    pub resource: Name,
}

impl GroupVersionResource {
    /// A resource known when the program is built.
    pub const fn from_static(
        group: &'static str,
        version: &'static str,
        resource: &'static str,
    ) -> Self {
        GroupVersionResource {
            group: Cow::Borrowed(group),
            version: Cow::Borrowed(version),
            resource: Cow::Borrowed(resource),
        }
    }

    /// The resource's group-version.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion {
            group: self.group.clone(),
            version: self.version.clone(),
        }
    }

    /// The resource in any version of its group.
    pub fn group_resource(&self) -> GroupResource {
        GroupResource {
            group: self.group.clone(),
            resource: self.resource.clone(),
        }
    }
}

/// A resource of a group, whatever the version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    /// The group, empty for the core group.
    pub group: Name,
    /// The resource: the plural name in URLs.
    pub resource: Name,
}

impl GroupResource {
    /// A resource known when the program is built.
    pub const fn from_static(group: &'static str, resource: &'static str) -> Self {
        GroupResource {
            group: Cow::Borrowed(group),
            resource: Cow::Borrowed(resource),
        }
    }

    /// A resource.
    pub fn new(group: impl Into<Name>, resource: impl Into<Name>) -> Self {
        GroupResource {
            group: group.into(),
            resource: resource.into(),
        }
    }
}

/// `resource.group`, or the resource alone in the core group, as kube-apiserver names a
/// resource in its messages (`flowschemas.flowcontrol.apiserver.k8s.io "x" not found`).
impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_group_is_named_by_its_version_alone() {
        let core = GroupVersion::from_static("", "v1");
        assert_eq!(core.api_version(), "v1");
        assert_eq!(core.api_root(), "api/v1");
        assert_eq!(GroupVersion::parse("v1"), core);
        let services = core.clone().with_resource("services");
        assert_eq!(services.group_resource().to_string(), "services");
        let service = core.with_kind("Service");
        assert_eq!(service.api_version(), "v1");
        assert_eq!(service.to_string(), "/v1, Kind=Service");
    }

    #[test]
    fn other_groups_are_named_group_slash_version() {
        let apps = GroupVersion::parse("apps/v1");
        assert_eq!((apps.group.as_ref(), apps.version.as_ref()), ("apps", "v1"));
        assert_eq!(apps.api_version(), "apps/v1");
        assert_eq!(apps.api_root(), "apis/apps/v1");
        let kind = apps.clone().with_kind("Deployment");
        assert_eq!(kind.api_version(), "apps/v1");
        assert_eq!(kind.to_string(), "apps/v1, Kind=Deployment");
        assert_eq!(
            apps.with_resource("deployments")
                .group_resource()
                .to_string(),
            "deployments.apps"
        );
    }

    #[test]
    fn owned_and_borrowed_names_are_the_same_identity() {
        let borrowed = GroupVersionKind::from_static("g.io", "v1", "K");
        let owned = GroupVersionKind::new("g.io".to_owned(), "v1".to_owned(), "K".to_owned());
        assert_eq!(borrowed, owned);
        let mut set = std::collections::HashSet::new();
        set.insert(borrowed);
        assert!(set.contains(&owned));
    }
}
