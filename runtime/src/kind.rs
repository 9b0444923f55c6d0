//! The traits every generated type implements: its defaults, and for a list kind its items.
//!
//! `apfkit-codegen` writes the impls; the traits live here so that every generated tree (the
//! flowcontrol types, their hubs, a user's CRD) implements the same ones and code written
//! against them works with all of them.

use std::collections::BTreeMap;

/// Applies the server-side defaults of the schema, recursively, in place.
pub trait ApplyDefaults {
    /// Fills in every defaulted field that is unset (and, where the schema says so, zero),
    /// then runs any hand-written defaulting hook.
    fn apply_defaults(&mut self);
    /// Whether [`ApplyDefaults::apply_defaults`] would leave the value as it is, answered
    /// without a copy. `false` when unsure: the generated types answer exactly, unless a
    /// defaulting hook has no check registered beside it.
    fn is_defaulted(&self) -> bool {
        false
    }
}

impl<T: ApplyDefaults> ApplyDefaults for Option<T> {
    fn apply_defaults(&mut self) {
        if let Some(value) = self {
            value.apply_defaults();
        }
    }
    fn is_defaulted(&self) -> bool {
        self.as_ref().is_none_or(ApplyDefaults::is_defaulted)
    }
}

impl<T: ApplyDefaults> ApplyDefaults for Box<T> {
    fn apply_defaults(&mut self) {
        (**self).apply_defaults();
    }
    fn is_defaulted(&self) -> bool {
        (**self).is_defaulted()
    }
}

impl<T: ApplyDefaults> ApplyDefaults for Vec<T> {
    fn apply_defaults(&mut self) {
        self.iter_mut().for_each(ApplyDefaults::apply_defaults);
    }
    fn is_defaulted(&self) -> bool {
        self.iter().all(ApplyDefaults::is_defaulted)
    }
}

impl<T: ApplyDefaults> ApplyDefaults for BTreeMap<String, T> {
    fn apply_defaults(&mut self) {
        self.values_mut().for_each(ApplyDefaults::apply_defaults);
    }
    fn is_defaulted(&self) -> bool {
        self.values().all(ApplyDefaults::is_defaulted)
    }
}

/// A list kind and the kind of its items.
///
/// A kind's identity (group, version, kind, `apiVersion`, plural and scope) is k8s-openapi's
/// [`k8s_openapi::Resource`], which every generated kind implements, lists included (as
/// k8s-openapi's own `List<T>` does: no URL segment, the items' scope); this trait adds only
/// what k8s-openapi lacks, the item type of a generated `<Kind>List`.
///
/// ```
/// use apfkit_runtime::k8s_openapi::Resource;
/// use apfkit_runtime::ListKind;
///
/// fn describe<L: ListKind>() -> String {
///     format!("{} holds {} ({})", L::KIND, L::Item::KIND, L::Item::URL_PATH_SEGMENT)
/// }
/// # struct Widget;
/// # impl Resource for Widget {
/// #     const API_VERSION: &'static str = "example.com/v1";
/// #     const GROUP: &'static str = "example.com";
/// #     const KIND: &'static str = "Widget";
/// #     const VERSION: &'static str = "v1";
/// #     const URL_PATH_SEGMENT: &'static str = "widgets";
/// #     type Scope = apfkit_runtime::k8s_openapi::NamespaceResourceScope;
/// # }
/// # struct WidgetList;
/// # impl Resource for WidgetList {
/// #     const API_VERSION: &'static str = "example.com/v1";
/// #     const GROUP: &'static str = "example.com";
/// #     const KIND: &'static str = "WidgetList";
/// #     const VERSION: &'static str = "v1";
/// #     const URL_PATH_SEGMENT: &'static str = "";
/// #     type Scope = apfkit_runtime::k8s_openapi::NamespaceResourceScope;
/// # }
/// # impl ListKind for WidgetList { type Item = Widget; }
/// assert_eq!(describe::<WidgetList>(), "WidgetList holds Widget (widgets)");
/// ```
pub trait ListKind: k8s_openapi::Resource {
    /// The item kind.
    type Item: k8s_openapi::Resource;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value whose default is 7, for the container impls.
    #[derive(Debug, PartialEq)]
    struct Shares(Option<i32>);

    impl ApplyDefaults for Shares {
        fn apply_defaults(&mut self) {
            self.0.get_or_insert(7);
        }
        fn is_defaulted(&self) -> bool {
            self.0.is_some()
        }
    }

    #[test]
    fn containers_default_every_element() {
        let mut list = vec![Shares(None), Shares(Some(1))];
        assert!(!list.is_defaulted());
        list.apply_defaults();
        assert_eq!(list, [Shares(Some(7)), Shares(Some(1))]);
        assert!(list.is_defaulted());

        let mut map = BTreeMap::from([("a".to_owned(), Box::new(Shares(None)))]);
        assert!(!map.is_defaulted());
        map.apply_defaults();
        assert_eq!(*map["a"], Shares(Some(7)));

        let mut absent: Option<Shares> = None;
        assert!(
            absent.is_defaulted(),
            "nothing to default in an absent value"
        );
        absent.apply_defaults();
        assert_eq!(absent, None);
    }
}

/// One kind of a generated API, as its `KINDS` table lists it (resources and list kinds): what
/// a program needs to list, look up, serve and export kinds without a hand-written table. `W`
/// is the tree's wire encodings (`()` for a tree without one); each generated tree names this type
/// `KindInfo`.
#[derive(Debug, Clone)]
pub struct KindInfo<W: 'static = ()> {
    /// API group, empty for the legacy core group.
    pub group: &'static str,
    /// Version inside the group.
    pub version: &'static str,
    /// The kind.
    pub kind: &'static str,
    /// `group/version`, or only the version for the core group.
    pub api_version: &'static str,
    /// For a resource: the plural name used in URLs.
    pub plural: Option<&'static str>,
    /// For a resource: whether it lives in a namespace.
    pub namespaced: bool,
    /// For a resource with a list kind: that kind.
    pub list_kind: Option<&'static str>,
    /// For a list kind: the kind of its items.
    pub item_kind: Option<&'static str>,
    /// For a resource: its subresources (`status`, `scale`), sorted.
    pub subresources: &'static [&'static str],
    /// For a custom resource with a `scale` subresource: where its replicas are.
    pub scale: Option<ScaleSubresource>,
    /// The JSON Schema (draft 2020-12) schemars derives for the type, when the tree was
    /// generated with schemars ([`KindInfo::json_schema`]).
    pub schema: Option<fn() -> serde_json::Value>,
    /// kube-apiserver's encodings of the kind (protobuf, Go-order JSON), when the tree has
    /// wire codecs and the kind's schema a Go layout.
    pub wire: Option<W>,
}

impl<W> KindInfo<W> {
    /// The kind's group, version and kind.
    pub const fn gvk(&self) -> crate::identity::GroupVersionKind {
        crate::identity::GroupVersionKind::from_static(self.group, self.version, self.kind)
    }

    /// Whether this is a list kind.
    pub fn is_list(&self) -> bool {
        self.item_kind.is_some()
    }

    /// The kind's JSON Schema (draft 2020-12), when the tree was generated with schemars.
    pub fn json_schema(&self) -> Option<serde_json::Value> {
        self.schema.map(|schema| schema())
    }
}

/// Where the `autoscaling/v1` `Scale` of an object reads and writes its replicas: a CRD's
/// `subresources.scale` (its JSON form, camelCase), simple JSON paths such as
/// `.spec.replicas`. The names are borrowed in generated registries and owned when read from
/// a CRD at run time.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSubresource {
    /// JSON path of the desired replicas, written by `/scale` (`specReplicasPath`).
    pub spec_replicas_path: crate::identity::Name,
    /// JSON path of the observed replicas (`statusReplicasPath`).
    pub status_replicas_path: crate::identity::Name,
    /// JSON path of the label selector in its string form (`labelSelectorPath`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector_path: Option<crate::identity::Name>,
}
