//! Every pair of versions round-trips: an object of version A converted to B and back is the
//! object it was, for random objects of every version (property tests), through the typed
//! conversions and through the dynamic scheme.

use std::collections::BTreeMap;

use apfkit_example_widgets::api::SCHEME;
use apfkit_example_widgets::api::types::{v1, v1alpha1, v1beta1};
use apfkit_example_widgets::hooks::{IMAGE_ANNOTATION, PAUSED_ANNOTATION};
use apfkit_runtime::{FromHub, ToHub};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Images made of the characters that matter to splitting: `:` and `/`.
fn image_text() -> impl Strategy<Value = String> {
    "[a:/1]{0,8}"
}

fn v1_image() -> impl Strategy<Value = v1::WidgetSpecImage> {
    (image_text(), proptest::option::of("[b:/2]{0,4}"))
        .prop_map(|(repository, tag)| v1::WidgetSpecImage { repository, tag })
}

/// One annotation. With `reserved`, the conversion's own keys come too, with good and bad
/// values (objects written through older versions, or edited by hand).
fn annotation(reserved: bool) -> BoxedStrategy<(String, String)> {
    let ordinary = ("[a-c]{1,3}", "[a-z]{0,3}").boxed();
    if !reserved {
        return ordinary;
    }
    let paused = prop_oneof![Just("true"), Just("false"), Just("TRUE"), Just("")]
        .prop_map(|v| (PAUSED_ANNOTATION.to_owned(), v.to_owned()));
    let image = (v1_image(), any::<bool>()).prop_map(|(image, canonical)| {
        let text = if canonical {
            serde_json::json!({"repository": image.repository, "tag": image.tag}).to_string()
        } else {
            serde_json::to_string_pretty(&image).unwrap()
        };
        (IMAGE_ANNOTATION.to_owned(), text)
    });
    prop_oneof![3 => ordinary, 1 => paused, 1 => image].boxed()
}

/// Metadata with annotations as Go writes them: absent or non-empty.
fn metadata(reserved: bool) -> impl Strategy<Value = ObjectMeta> {
    (
        "[a-z]{1,6}",
        proptest::option::of("[a-z]{1,4}"),
        proptest::option::of(
            proptest::collection::vec(annotation(reserved), 1..4)
                .prop_map(|entries| entries.into_iter().collect::<BTreeMap<_, _>>()),
        ),
    )
        .prop_map(|(name, namespace, annotations)| ObjectMeta {
            name: Some(name),
            namespace,
            annotations,
            ..ObjectMeta::default()
        })
}

fn replicas() -> impl Strategy<Value = Option<i32>> {
    proptest::option::of(any::<i32>())
}

fn v1alpha1_widget() -> impl Strategy<Value = v1alpha1::Widget> {
    let spec = (replicas(), proptest::option::of(image_text()))
        .prop_map(|(size, image)| v1alpha1::WidgetSpec { size, image });
    let status = replicas().prop_map(|ready_replicas| v1alpha1::WidgetStatus { ready_replicas });
    (
        metadata(true),
        proptest::option::of(spec),
        proptest::option::of(status),
    )
        .prop_map(|(metadata, spec, status)| v1alpha1::Widget {
            metadata,
            spec,
            status,
        })
}

fn v1beta1_widget() -> impl Strategy<Value = v1beta1::Widget> {
    let spec = (replicas(), proptest::option::of(image_text()))
        .prop_map(|(replicas, image)| v1beta1::WidgetSpec { replicas, image });
    let status = replicas().prop_map(|ready_replicas| v1beta1::WidgetStatus { ready_replicas });
    (
        metadata(true),
        proptest::option::of(spec),
        proptest::option::of(status),
    )
        .prop_map(|(metadata, spec, status)| v1beta1::Widget {
            metadata,
            spec,
            status,
        })
}

/// v1 objects: the reserved annotation keys belong to the conversion, so they are not drawn.
fn v1_widget() -> impl Strategy<Value = v1::Widget> {
    let spec = (
        replicas(),
        proptest::option::of(v1_image()),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(replicas, image, paused)| v1::WidgetSpec {
            replicas,
            image,
            paused,
        });
    let status = replicas().prop_map(|ready_replicas| v1::WidgetStatus { ready_replicas });
    (
        metadata(false),
        proptest::option::of(spec),
        proptest::option::of(status),
    )
        .prop_map(|(metadata, spec, status)| v1::Widget {
            metadata,
            spec,
            status,
        })
}

/// A → B → A through the typed conversions, and the same through the dynamic scheme on JSON.
fn round_trip<A, B>(object: &A, b_api_version: &str) -> Result<(), TestCaseError>
where
    A: ToHub<Hub = v1::Widget> + FromHub<Hub = v1::Widget> + Clone + PartialEq + std::fmt::Debug,
    A: Serialize + DeserializeOwned,
    B: ToHub<Hub = v1::Widget> + FromHub<Hub = v1::Widget>,
{
    let there = B::from_owned_hub(object.to_hub());
    let back = A::from_owned_hub(there.into_hub());
    prop_assert_eq!(&back, object);

    let json = serde_json::to_value(object).unwrap();
    let a_api_version = json["apiVersion"].as_str().unwrap().to_owned();
    let there = SCHEME.convert_object(json.clone(), b_api_version).unwrap();
    prop_assert_eq!(there["apiVersion"].as_str(), Some(b_api_version));
    let back = SCHEME.convert_object(there, &a_api_version).unwrap();
    prop_assert_eq!(back, json);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn v1alpha1_through_every_version(object in v1alpha1_widget()) {
        round_trip::<_, v1beta1::Widget>(&object, "example.com/v1beta1")?;
        round_trip::<_, v1::Widget>(&object, "example.com/v1")?;
        round_trip::<_, v1alpha1::Widget>(&object, "example.com/v1alpha1")?;
    }

    #[test]
    fn v1beta1_through_every_version(object in v1beta1_widget()) {
        round_trip::<_, v1alpha1::Widget>(&object, "example.com/v1alpha1")?;
        round_trip::<_, v1::Widget>(&object, "example.com/v1")?;
        round_trip::<_, v1beta1::Widget>(&object, "example.com/v1beta1")?;
    }

    #[test]
    fn v1_through_every_version(object in v1_widget()) {
        round_trip::<_, v1alpha1::Widget>(&object, "example.com/v1alpha1")?;
        round_trip::<_, v1beta1::Widget>(&object, "example.com/v1beta1")?;
        round_trip::<_, v1::Widget>(&object, "example.com/v1")?;
    }
}

/// `B::round_trips(hub)` against the round trip itself: `true` only when the hub object comes
/// back equal. Returns the answer.
fn check_round_trips<B>(hub: &<B as FromHub>::Hub) -> Result<bool, TestCaseError>
where
    B: FromHub + ToHub<Hub = <B as FromHub>::Hub>,
    <B as FromHub>::Hub: Clone + PartialEq + std::fmt::Debug,
{
    let answer = B::round_trips(hub);
    if answer {
        prop_assert_eq!(&B::from_owned_hub(hub.clone()).into_hub(), hub);
    }
    Ok(answer)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// What the generated `FromHub::round_trips` says, with the example's checks, holds for
    /// any v1 object, reserved annotation keys included; the spec's check is exact.
    #[test]
    fn round_trip_checks_hold(object in v1_widget(), metadata in metadata(true)) {
        for hub in [object.clone(), v1::Widget { metadata, ..object }] {
            let whole = check_round_trips::<v1alpha1::Widget>(&hub)?;
            prop_assert_eq!(check_round_trips::<v1beta1::Widget>(&hub)?, whole);
            prop_assert!(check_round_trips::<v1::Widget>(&hub)?, "v1 is the hub");
            if let Some(spec) = &hub.spec {
                let exact = v1beta1::WidgetSpec::from_hub(spec).into_hub() == *spec;
                prop_assert_eq!(check_round_trips::<v1beta1::WidgetSpec>(spec)?, exact);
                prop_assert_eq!(check_round_trips::<v1alpha1::WidgetSpec>(spec)?, exact);
            }
        }
    }
}

/// The Widget's answer is its own check and its spec's: a paused spec (which the Widget's
/// prepare hook carries in an annotation, so the Widget does come back) still answers
/// `false`, because the spec alone would lose it. Safe, only slower.
#[test]
fn a_widget_round_trips_only_if_its_check_and_its_spec_say_so() {
    let mut hub = v1::Widget {
        metadata: ObjectMeta {
            name: Some("w".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(v1::WidgetSpec {
            replicas: Some(1),
            image: None,
            paused: None,
        }),
        status: None,
    };
    assert!(v1beta1::Widget::round_trips(&hub));
    hub.spec.as_mut().unwrap().paused = Some(true);
    assert!(apfkit_example_widgets::hooks::widget_round_trips(&hub));
    assert!(!v1beta1::Widget::round_trips(&hub));
    assert_eq!(v1beta1::Widget::from_hub(&hub).into_hub(), hub);
    hub.spec.as_mut().unwrap().paused = None;
    hub.metadata.annotations = Some([(PAUSED_ANNOTATION.to_owned(), "true".to_owned())].into());
    assert!(!v1beta1::Widget::round_trips(&hub));
    assert_ne!(v1beta1::Widget::from_hub(&hub).into_hub(), hub);
}

#[test]
fn what_older_versions_cannot_hold_travels_in_annotations() {
    let new = v1::Widget {
        metadata: ObjectMeta {
            name: Some("w".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(v1::WidgetSpec {
            replicas: Some(2),
            // `a:b` with no tag would read back as repository `a`, tag `b`.
            image: Some(v1::WidgetSpecImage {
                repository: "a:b".to_owned(),
                tag: None,
            }),
            paused: Some(false),
        }),
        status: None,
    };
    let old = v1alpha1::Widget::from_hub(&new);
    let spec = old.spec.as_ref().unwrap();
    assert_eq!((spec.size, spec.image.as_deref()), (Some(2), Some("a:b")));
    let annotations = old.metadata.annotations.as_ref().unwrap();
    assert_eq!(annotations[PAUSED_ANNOTATION], "false");
    assert_eq!(
        annotations[IMAGE_ANNOTATION],
        r#"{"repository":"a:b","tag":null}"#
    );
    assert_eq!(old.to_hub(), new);
}

#[test]
fn an_image_edited_through_an_older_version_wins_over_its_stale_annotation() {
    let new = v1::Widget {
        spec: Some(v1::WidgetSpec {
            image: Some(v1::WidgetSpecImage {
                repository: "a:b".to_owned(),
                tag: None,
            }),
            ..v1::WidgetSpec::default()
        }),
        ..v1::Widget::default()
    };
    let mut old = v1beta1::Widget::from_hub(&new);
    old.spec.as_mut().unwrap().image = Some("registry/app:2".to_owned());
    let hub = old.to_hub();
    let image = hub.spec.unwrap().image.unwrap();
    assert_eq!(
        (image.repository.as_str(), image.tag.as_deref()),
        ("registry/app", Some("2"))
    );
    // The stale annotation is left as an ordinary one: the conversion did not write it.
    assert!(
        hub.metadata
            .annotations
            .unwrap()
            .contains_key(IMAGE_ANNOTATION)
    );
}
