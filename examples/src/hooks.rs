//! The hand-written parts of the conversions: what the generated copy cannot do because the
//! versions differ. Each `*_to_hub`/`*_from_hub` hook runs after the generated copy of the
//! fields both sides share; [`annotate`] runs before it.
//!
//! Nothing is lost on the way through an older version: `spec.paused` (v1 only) and a v1
//! image that the one-string form cannot give back travel in the annotations
//! [`PAUSED_ANNOTATION`] and [`IMAGE_ANNOTATION`], as kube-apiserver keeps v1beta3's zero
//! shares. These two annotation keys are reserved for the conversion. An empty annotation
//! map is the same as none (Go leaves empty maps out), so one emptied by a conversion becomes
//! none.

use std::collections::BTreeMap;

use crate::api::types::v1;
use crate::image;

/// Keeps v1's `spec.paused` (`"true"` or `"false"`) in the older versions.
pub const PAUSED_ANNOTATION: &str = "widgets.example.com/paused";
/// Keeps a v1 image whose one-string form is ambiguous (as JSON) in the older versions.
pub const IMAGE_ANNOTATION: &str = "widgets.example.com/image";

/// Before converting a v1 Widget to an older version: moves what the older spec cannot hold
/// into annotations, which the generated copy of the metadata then carries across.
pub fn annotate(hub: &mut v1::Widget) {
    let Some(spec) = hub.spec.as_mut() else {
        return;
    };
    let mut keep = Vec::new();
    if let Some(paused) = spec.paused.take() {
        keep.push((PAUSED_ANNOTATION, paused.to_string()));
    }
    if let Some(image) = spec
        .image
        .as_ref()
        .filter(|image| !image::round_trips(image))
    {
        keep.push((IMAGE_ANNOTATION, image_annotation(image)));
    }
    if !keep.is_empty() {
        let annotations = hub.metadata.annotations.get_or_insert_with(BTreeMap::new);
        for (key, value) in keep {
            annotations.insert(key.to_owned(), value);
        }
    }
}

/// The image annotation's exact text.
fn image_annotation(image: &v1::WidgetSpecImage) -> String {
    serde_json::json!({"repository": image.repository, "tag": image.tag}).to_string()
}

/// After converting an older Widget to v1: takes back what [`annotate`] kept. An annotation
/// is used only when it is exactly what `annotate` writes for the object's current spec;
/// any other value (set by hand, or stale after an edit through an older version) stays an
/// ordinary annotation.
pub fn read_annotations<Source>(_from: &Source, to: &mut v1::Widget) {
    let (Some(spec), Some(annotations)) = (to.spec.as_mut(), to.metadata.annotations.as_mut())
    else {
        return;
    };
    let paused = match annotations.get(PAUSED_ANNOTATION).map(String::as_str) {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    if paused.is_some() {
        spec.paused = paused;
        annotations.remove(PAUSED_ANNOTATION);
    }
    let kept = annotations.get(IMAGE_ANNOTATION).and_then(|text| {
        let image: v1::WidgetSpecImage = serde_json::from_str(text).ok()?;
        let current = spec.image.as_ref()?;
        let exact = *text == image_annotation(&image)
            && !image::round_trips(&image)
            && image::join(&image) == image::join(current);
        exact.then_some(image)
    });
    if let Some(image) = kept {
        spec.image = Some(image);
        annotations.remove(IMAGE_ANNOTATION);
    }
    if annotations.is_empty() {
        to.metadata.annotations = None;
    }
}

/// Whether [`annotate`] and [`read_annotations`] give a v1 Widget back unchanged, as far as
/// the metadata goes (the generated code checks the spec with the spec's own check): they do
/// unless the object already carries one of the reserved keys, which the way back may take
/// for its own, or an empty annotation map, which the way back leaves out.
pub fn widget_round_trips(hub: &v1::Widget) -> bool {
    hub.metadata.annotations.as_ref().is_none_or(|annotations| {
        !annotations.is_empty()
            && !annotations.contains_key(PAUSED_ANNOTATION)
            && !annotations.contains_key(IMAGE_ANNOTATION)
    })
}

/// Whether a v1 spec comes back unchanged through an older spec alone: `paused` does not
/// (without [`annotate`], which moves it out first), nor an image the one-string form cannot
/// give back. Shared by both older versions.
pub fn spec_round_trips(hub: &v1::WidgetSpec) -> bool {
    hub.paused.is_none() && hub.image.as_ref().is_none_or(image::round_trips)
}

/// v1alpha1: `size` is v1's `replicas`; `image` is one string.
pub mod v1alpha1 {
    use crate::api::types::{v1, v1alpha1};
    use crate::image;

    /// `size` → `replicas`, `image` split.
    pub fn spec_to_hub(from: &v1alpha1::WidgetSpec, to: &mut v1::WidgetSpec) {
        to.replicas = from.size;
        to.image = from.image.as_deref().map(image::split);
    }

    /// `replicas` → `size`, `image` joined; `paused` went to an annotation
    /// ([`crate::hooks::annotate`]).
    pub fn spec_from_hub(from: &v1::WidgetSpec, to: &mut v1alpha1::WidgetSpec) {
        to.size = from.replicas;
        to.image = from.image.as_ref().map(image::join);
    }
}

/// v1beta1: `replicas` as in v1; `image` is one string.
pub mod v1beta1 {
    use crate::api::types::{v1, v1beta1};
    use crate::image;

    /// `image` split.
    pub fn spec_to_hub(from: &v1beta1::WidgetSpec, to: &mut v1::WidgetSpec) {
        to.image = from.image.as_deref().map(image::split);
    }

    /// `image` joined; `paused` went to an annotation ([`crate::hooks::annotate`]).
    pub fn spec_from_hub(from: &v1::WidgetSpec, to: &mut v1beta1::WidgetSpec) {
        to.image = from.image.as_ref().map(image::join);
    }
}
