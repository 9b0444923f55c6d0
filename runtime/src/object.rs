//! What code that handles objects of every kind alike asks of them: the hub object of a
//! generated scheme (its `HubObject` enum) tells its kind and hands out its metadata, so that
//! callers never match on kind names.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// An object of any kind of an API: what the generated `HubObject` enum implements.
///
/// ```
/// use apfkit_runtime::Object;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// /// A scheme's hub object, as the generator writes it for two kinds.
/// enum HubObject {
///     Cat(ObjectMeta),
///     Dog(ObjectMeta),
/// }
/// impl Object for HubObject {
///     fn kind(&self) -> &'static str {
///         match self { HubObject::Cat(_) => "Cat", HubObject::Dog(_) => "Dog" }
///     }
///     fn metadata(&self) -> &ObjectMeta {
///         match self { HubObject::Cat(m) | HubObject::Dog(m) => m }
///     }
///     fn metadata_mut(&mut self) -> &mut ObjectMeta {
///         match self { HubObject::Cat(m) | HubObject::Dog(m) => m }
///     }
/// }
///
/// let mut pet = HubObject::Dog(ObjectMeta::default());
/// pet.metadata_mut().name = Some("rex".to_owned());
/// assert_eq!((pet.kind(), pet.name()), ("Dog", "rex"));
/// ```
pub trait Object {
    /// The kind, such as `FlowSchema`.
    fn kind(&self) -> &str;
    /// The object's metadata.
    fn metadata(&self) -> &ObjectMeta;
    /// The object's metadata, to change it.
    fn metadata_mut(&mut self) -> &mut ObjectMeta;
    /// `metadata.name`, empty when unset.
    fn name(&self) -> &str {
        self.metadata().name.as_deref().unwrap_or_default()
    }
}

/// A hub kind that the scheme's hub object (the generated `HubObject` enum) holds: how to put
/// it in and take it out, and its kind. Generated for every hub kind of a scheme.
pub trait HubKind: Sized {
    /// The hub object of the scheme, which holds any of its hub kinds.
    type Object;
    /// The kind, as [`Object::kind`] tells it of the wrapped object.
    const KIND: &'static str;
    /// Wraps the object.
    fn wrap(self) -> Self::Object;
    /// The object, if `object` holds this kind.
    fn take(object: Self::Object) -> Option<Self>;
    /// Whether `object` holds this kind.
    fn holds(object: &Self::Object) -> bool;
}
