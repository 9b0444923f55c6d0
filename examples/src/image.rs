//! The image reference: one string (`repository[:tag]`) before v1, two fields in v1.

use crate::api::types::v1::WidgetSpecImage;

/// Splits `repository[:tag]` at the last `:` after the last `/` (a registry's port is part of
/// the repository): `registry:5000/app:1.2` → (`registry:5000/app`, `1.2`).
pub fn split(image: &str) -> WidgetSpecImage {
    let name_start = image.rfind('/').map_or(0, |slash| slash + 1);
    match image[name_start..].rfind(':') {
        Some(colon) => WidgetSpecImage {
            repository: image[..name_start + colon].to_owned(),
            tag: Some(image[name_start + colon + 1..].to_owned()),
        },
        None => WidgetSpecImage {
            repository: image.to_owned(),
            tag: None,
        },
    }
}

/// The one-string form: `repository`, then `:tag` if there is a tag.
pub fn join(image: &WidgetSpecImage) -> String {
    match &image.tag {
        Some(tag) => format!("{}:{tag}", image.repository),
        None => image.repository.clone(),
    }
}

/// Whether the one-string form gives `image` back. It does not when the repository's last
/// segment has a `:` and there is no tag, or the tag has a `/` or a `:`.
pub fn round_trips(image: &WidgetSpecImage) -> bool {
    split(&join(image)) == *image
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_port_stays_in_the_repository() {
        let image = split("registry:5000/team/app:1.2");
        assert_eq!(image.repository, "registry:5000/team/app");
        assert_eq!(image.tag.as_deref(), Some("1.2"));
        assert_eq!(split("registry:5000/app").tag, None);
        assert_eq!(split("app:").tag.as_deref(), Some(""));
    }

    #[test]
    fn every_string_survives_split_and_join() {
        for text in [
            "",
            ":",
            "a",
            "a:b",
            "a:b:c",
            "h:1/a",
            "h:1/a:t",
            "a/",
            "a@sha256:00",
        ] {
            assert_eq!(join(&split(text)), text);
        }
    }

    #[test]
    fn ambiguous_pairs_are_detected() {
        let ambiguous = WidgetSpecImage {
            repository: "a:b".to_owned(),
            tag: None,
        };
        assert!(!round_trips(&ambiguous));
        let slash_in_tag = WidgetSpecImage {
            repository: "a".to_owned(),
            tag: Some("x/y".to_owned()),
        };
        assert!(!round_trips(&slash_in_tag));
        assert!(round_trips(&split("registry:5000/app:1.2")));
    }
}
