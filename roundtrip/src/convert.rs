//! What converts a custom resource between versions: the CRD's webhook as kube-apiserver
//! calls it, `None` (only `apiVersion` changes), or any code behind [`Converter`].

use apfkit_apiextensions::webhook::{Exchange, Refused, Webhook};
use serde_json::Value;

/// What converts objects of a CRD from one version to another.
pub trait Converter {
    /// `objects`, each of one version of the CRD (all of the same kind), converted to
    /// `api_version`, in order; with the exchange that did it, when one can be shown.
    ///
    /// # Errors
    ///
    /// Why they could not be converted, as kube-apiserver would say it.
    fn convert(&self, objects: Vec<Value>, api_version: &str) -> Result<Converted, Refused>;
}

/// Objects converted, and how.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The objects, in the order sent.
    pub objects: Vec<Value>,
    /// The review sent and the answer got, for a webhook.
    pub exchange: Option<Exchange>,
}

/// `spec.conversion.strategy: None`: only `apiVersion` changes (the fields a version does
/// not declare are pruned when the object is read in it, which is where `None` loses).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoConversion;

impl Converter for NoConversion {
    fn convert(&self, mut objects: Vec<Value>, api_version: &str) -> Result<Converted, Refused> {
        for object in &mut objects {
            if let Value::Object(map) = object {
                map.insert("apiVersion".into(), api_version.into());
            }
        }
        Ok(Converted {
            objects,
            exchange: None,
        })
    }
}

/// A conversion webhook, sent the objects of a list in one `ConversionReview` as
/// kube-apiserver sends them, its answer checked as kube-apiserver checks it
/// (`apfkit_apiextensions::webhook`). [`Webhook::in_process`] runs Rust code as the webhook.
impl Converter for Webhook {
    fn convert(&self, objects: Vec<Value>, api_version: &str) -> Result<Converted, Refused> {
        let list_kind = objects.first().map_or_else(String::new, |first| {
            format!("{}List", apfkit_apiextensions::webhook::kind_of(first))
        });
        let (objects, exchange) = self.convert_list_exchanged(&list_kind, objects, api_version)?;
        Ok(Converted { objects, exchange })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_conversion_changes_only_the_api_version() {
        let object = json!({"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"a": 1}});
        let converted = NoConversion
            .convert(vec![object.clone()], "example.com/v2")
            .unwrap();
        let mut expected = object;
        expected["apiVersion"] = json!("example.com/v2");
        assert_eq!(converted.objects, vec![expected]);
    }
}
