//! This example's conversion webhook with a bug, for showing what `apfkit crd
//! check-conversion` finds (docs/conversion-check.md and its tests): `spec.image` forgotten
//! whenever an object is converted to `v1alpha1`. The right answers come from
//! [`crate::api::SCHEME`], as the `webhook` binary gives them.

use serde_json::Value;

/// The answer (HTTP status and body) the correct webhook gives to `review`: 200 and the
/// answering review, or 400 and why it is no review.
pub fn correct(review: &Value) -> (u16, Vec<u8>) {
    let body = serde_json::to_vec(review).unwrap_or_default();
    match apfkit_runtime::review::review(&crate::api::SCHEME, &body) {
        Ok(answer) => (200, answer),
        Err(why) => (400, why.to_string().into_bytes()),
    }
}

/// The answer of the webhook with the bug: [`correct`]'s, without `spec.image` in the
/// objects converted to `v1alpha1`.
pub fn forgetting_the_image(review: &Value) -> (u16, Vec<u8>) {
    let (status, answer) = correct(review);
    let Ok(mut answer) = serde_json::from_slice::<Value>(&answer) else {
        return (status, answer);
    };
    if review["request"]["desiredAPIVersion"] == "example.com/v1alpha1" {
        for object in answer["response"]["convertedObjects"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            if let Some(spec) = object["spec"].as_object_mut() {
                spec.remove("image");
            }
        }
    }
    (status, serde_json::to_vec(&answer).unwrap_or_default())
}
