//! The columns the kinds here share with every kind's table.

use std::borrow::Cow;

use apfkit_apiserver::table::Column;

/// A string column.
pub(crate) const fn text(name: &'static str, description: &'static str, priority: i32) -> Column {
    Column {
        name: Cow::Borrowed(name),
        type_name: Cow::Borrowed("string"),
        format: Cow::Borrowed(""),
        description: Cow::Borrowed(description),
        priority,
    }
}

/// The object's name, as every table starts.
pub(crate) const NAME: Column = Column {
    name: Cow::Borrowed("Name"),
    type_name: Cow::Borrowed("string"),
    format: Cow::Borrowed("name"),
    description: Cow::Borrowed("Name must be unique within a namespace."),
    priority: 0,
};

/// The object's age.
pub(crate) const AGE: Column = text(
    "Age",
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
    0,
);
