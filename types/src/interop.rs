//! Conversions between our flowcontrol v1 kinds and k8s-openapi's.
