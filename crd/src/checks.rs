//! The checks kube-apiserver makes of a CustomResourceDefinition itself
//! (apiextensions-apiserver's `ValidateCustomResourceDefinition`,
//! `pkg/apis/apiextensions/validation/validation.go`), besides its schemas: the name, the
//! group, the scope, the versions, the names, the conversion and the printer columns, with
//! upstream's paths (those of its internal version: `spec.conversion.webhookClientConfig`,
//! a column's `JSONPath`) and messages, after v1's defaults (a singular and a list kind from
//! the kind, conversion `None`).

use apfkit_runtime::field::names::{dns1035_label, dns1123_subdomain, object_name};
use apfkit_runtime::field::{BadValue, FieldError, Path};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as api;

/// The errors of the definition before its versions' schemas: its metadata, group and scope.
pub fn head(crd: &api::CustomResourceDefinition) -> Vec<FieldError> {
    let spec = &crd.spec;
    let required_name = format!("{}.{}", spec.names.plural, spec.group);
    let mut errors = object_name(
        crd.metadata.name.as_deref().unwrap_or(""),
        crd.metadata.generate_name.as_deref().unwrap_or(""),
        |name| {
            let mut found = dns1123_subdomain(name);
            if name != required_name {
                found.push(r#"must be spec.names.plural+"."+spec.group"#.to_owned());
            }
            found
        },
    );
    if crd
        .metadata
        .namespace
        .as_deref()
        .is_some_and(|ns| !ns.is_empty())
    {
        errors.push(FieldError::forbidden(
            Path::new("metadata").child("namespace"),
            "not allowed on this type",
        ));
    }
    let path = Path::new("spec");
    if spec.group.is_empty() {
        errors.push(FieldError::required(path.child("group"), ""));
    } else {
        let found = dns1123_subdomain(&spec.group);
        if !found.is_empty() {
            errors.push(FieldError::invalid(
                path.child("group"),
                BadValue::Str(spec.group.clone()),
                found.join(","),
            ));
        } else if !spec.group.contains('.') {
            errors.push(FieldError::invalid(
                path.child("group"),
                BadValue::Str(spec.group.clone()),
                "should be a domain with at least one dot",
            ));
        }
    }
    errors.extend(one_of(
        path.child("scope"),
        &spec.scope,
        &["Cluster", "Namespaced"],
    ));
    errors
}

/// The error of a version's name, if it is not a DNS-1035 label.
pub fn version_name(index: usize, name: &str) -> Option<FieldError> {
    let found = dns1035_label(name);
    (!found.is_empty()).then(|| {
        FieldError::invalid(
            Path::new("spec")
                .child("versions")
                .index(index)
                .child("name"),
            BadValue::Str(name.to_owned()),
            found.join(","),
        )
    })
}

/// The errors of the versions taken together, then of the names.
pub fn versions_and_names(crd: &api::CustomResourceDefinition) -> Vec<FieldError> {
    let spec = &crd.spec;
    let path = Path::new("spec");
    let mut errors = Vec::new();
    let names: Vec<&str> = spec.versions.iter().map(|v| v.name.as_str()).collect();
    let versions = || BadValue::Go(format!("{names:?}"));
    let unique = names
        .iter()
        .enumerate()
        .all(|(i, n)| !names[..i].contains(n));
    if !unique {
        errors.push(FieldError::invalid(
            path.child("versions"),
            versions(),
            "must contain unique version names",
        ));
    }
    if spec.versions.iter().filter(|v| v.storage).count() != 1 {
        errors.push(FieldError::invalid(
            path.child("versions"),
            versions(),
            "must have exactly one version marked as storage version",
        ));
    }
    let names_path = path.child("names");
    let n = &spec.names;
    if n.plural.is_empty() {
        errors.push(FieldError::required(names_path.child("plural"), ""));
    }
    if n.kind.is_empty() {
        errors.push(FieldError::required(names_path.child("kind"), ""));
    }
    let label = |field: &str, value: &str, lowered: bool| {
        let checked = if lowered {
            value.to_lowercase()
        } else {
            value.to_owned()
        };
        let found = dns1035_label(&checked);
        (!value.is_empty() && !found.is_empty()).then(|| {
            let detail = if lowered {
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    found.join(",")
                )
            } else {
                found.join(",")
            };
            FieldError::invalid(
                names_path.child(field),
                BadValue::Str(value.to_owned()),
                detail,
            )
        })
    };
    // v1's defaults: the singular is the kind in lower case, the list kind the kind + "List".
    let singular = n.singular.clone().unwrap_or_else(|| n.kind.to_lowercase());
    let list_kind = n
        .list_kind
        .clone()
        .unwrap_or_else(|| format!("{}List", n.kind));
    errors.extend(label("plural", &n.plural, false));
    errors.extend(label("singular", &singular, false));
    errors.extend(label("kind", &n.kind, true));
    errors.extend(label("listKind", &list_kind, true));
    for (i, short) in n.short_names.iter().flatten().enumerate() {
        let found = dns1035_label(short);
        if !found.is_empty() {
            errors.push(FieldError::invalid(
                names_path.child("shortNames").index(i),
                BadValue::Str(short.clone()),
                found.join(","),
            ));
        }
    }
    if !n.kind.is_empty() && n.kind == list_kind {
        errors.push(FieldError::invalid(
            names_path.child("listKind"),
            BadValue::Str(list_kind.clone()),
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in n.categories.iter().flatten().enumerate() {
        let found = dns1035_label(category);
        if !found.is_empty() {
            errors.push(FieldError::invalid(
                names_path.child("categories").index(i),
                BadValue::Str(category.clone()),
                found.join(","),
            ));
        }
    }
    errors
}

/// The errors of the conversion and the printer columns, after the schemas.
pub fn tail(crd: &api::CustomResourceDefinition) -> Vec<FieldError> {
    let spec = &crd.spec;
    let mut errors = Vec::new();
    if let Some(conversion) = &spec.conversion {
        errors.extend(conversion_errors(conversion));
    }
    // Columns the same in every version are checked once, where kube-apiserver's internal
    // version keeps them (`spec.additionalPrinterColumns`).
    let columns: Vec<&Option<Vec<api::CustomResourceColumnDefinition>>> = spec
        .versions
        .iter()
        .map(|v| &v.additional_printer_columns)
        .collect();
    let shared = columns.windows(2).all(|w| w[0] == w[1]);
    for (i, version) in spec.versions.iter().enumerate() {
        if shared && i > 0 {
            break;
        }
        let path = if shared {
            Path::new("spec").child("additionalPrinterColumns")
        } else {
            Path::new("spec")
                .child("versions")
                .index(i)
                .child("additionalPrinterColumns")
        };
        for (j, column) in version
            .additional_printer_columns
            .iter()
            .flatten()
            .enumerate()
        {
            errors.extend(column_errors(column, &path.index(j)));
        }
    }
    errors
}

fn one_of(path: Path, value: &str, accepted: &[&str]) -> Option<FieldError> {
    if value.is_empty() {
        return Some(FieldError::required(path, ""));
    }
    (!accepted.contains(&value))
        .then(|| FieldError::not_supported(path, BadValue::Str(value.to_owned()), accepted))
}

fn conversion_errors(conversion: &api::CustomResourceConversion) -> Vec<FieldError> {
    let path = Path::new("spec").child("conversion");
    let mut errors: Vec<FieldError> = one_of(
        path.child("strategy"),
        &conversion.strategy,
        &["None", "Webhook"],
    )
    .into_iter()
    .collect();
    let client = conversion
        .webhook
        .as_ref()
        .and_then(|w| w.client_config.as_ref());
    let review_versions = conversion
        .webhook
        .as_ref()
        .map(|w| w.conversion_review_versions.clone())
        .unwrap_or_default();
    if conversion.strategy == "Webhook" {
        match client {
            None => errors.push(FieldError::required(
                path.child("webhookClientConfig"),
                "required when strategy is set to Webhook",
            )),
            Some(client) if client.url.is_some() == client.service.is_some() => {
                errors.push(FieldError::required(
                    path.child("webhookClientConfig"),
                    "exactly one of url or service is required",
                ));
            }
            Some(client) => {
                if let Some(url) = &client.url {
                    let url_path = path.child("webhookClientConfig").child("url");
                    errors.extend(webhook_url_errors(&url_path, url));
                }
            }
        }
        let versions_path = path.child("conversionReviewVersions");
        if review_versions.is_empty() {
            errors.push(FieldError::required(versions_path, ""));
        } else {
            for (i, version) in review_versions.iter().enumerate() {
                if review_versions[..i].contains(version) {
                    errors.push(FieldError::invalid(
                        versions_path.index(i),
                        BadValue::Str(version.clone()),
                        "duplicate version",
                    ));
                    continue;
                }
                for message in dns1035_label(version) {
                    errors.push(FieldError::invalid(
                        versions_path.index(i),
                        BadValue::Str(version.clone()),
                        message,
                    ));
                }
            }
            if !review_versions.iter().any(|v| v == "v1" || v == "v1beta1") {
                errors.push(FieldError::invalid(
                    versions_path,
                    BadValue::Strings(review_versions.clone()),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    } else {
        if client.is_some() {
            errors.push(FieldError::forbidden(
                path.child("webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review_versions.is_empty() {
            errors.push(FieldError::forbidden(
                path.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errors
}

/// kube-apiserver's checks of a webhook's URL (k8s.io/apiserver
/// `pkg/util/webhook/validation.go`, `ValidateWebhookURL` with `forceHttps`): https only, a
/// host, and no user information, fragment or query. The URL is split as Go's `url.Parse`
/// splits it.
fn webhook_url_errors(path: &Path, url: &str) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let parsed = match GoUrl::parse(url) {
        Ok(parsed) => parsed,
        Err(why) => {
            return vec![FieldError::required(
                path.clone(),
                format!(
                    "url must be a valid URL: parse {}: {why}{FORM}",
                    apfkit_runtime::field::go_quote(url)
                ),
            )];
        }
    };
    let mut errors = Vec::new();
    let invalid = |value: &str, message: String| {
        FieldError::invalid(path.clone(), BadValue::Str(value.to_owned()), message)
    };
    if parsed.scheme != "https" {
        errors.push(invalid(
            &parsed.scheme,
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if parsed.host.is_empty() {
        errors.push(invalid(
            parsed.host,
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = parsed.user {
        errors.push(invalid(
            user,
            "user information is not permitted in the URL".to_owned(),
        ));
    }
    if !parsed.fragment.is_empty() {
        errors.push(invalid(
            parsed.fragment,
            "fragments are not permitted in the URL".to_owned(),
        ));
    }
    if !parsed.query.is_empty() {
        errors.push(invalid(
            parsed.query,
            "query parameters are not permitted in the URL".to_owned(),
        ));
    }
    errors
}

/// The parts of a URL the webhook checks read, split as Go's `net/url.Parse` splits them.
struct GoUrl<'a> {
    /// Lower-cased, as Go lower-cases it.
    scheme: String,
    user: Option<&'a str>,
    host: &'a str,
    query: &'a str,
    fragment: &'a str,
}

impl<'a> GoUrl<'a> {
    fn parse(url: &'a str) -> Result<GoUrl<'a>, &'static str> {
        if url.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return Err("net/url: invalid control character in URL");
        }
        let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
        // Go's getScheme: letters first, then letters, digits, `+`, `-` or `.` up to a `:`.
        let mut scheme = "";
        let mut rest = rest;
        for (i, c) in rest.char_indices() {
            match c {
                'a'..='z' | 'A'..='Z' => {}
                '0'..='9' | '+' | '-' | '.' if i > 0 => {}
                ':' if i == 0 => return Err("missing protocol scheme"),
                ':' => {
                    scheme = &rest[..i];
                    rest = &rest[i + 1..];
                    break;
                }
                _ => break,
            }
        }
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (user, host) = match rest.strip_prefix("//") {
            Some(authority) => {
                let authority = authority.split('/').next().unwrap_or("");
                match authority.rsplit_once('@') {
                    Some((user, host)) => (Some(user), host),
                    None => (None, authority),
                }
            }
            None => (None, ""),
        };
        Ok(GoUrl {
            scheme: scheme.to_ascii_lowercase(),
            user,
            host,
            query,
            fragment,
        })
    }
}

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";

fn column_errors(column: &api::CustomResourceColumnDefinition, path: &Path) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if column.name.is_empty() {
        errors.push(FieldError::required(path.child("name"), ""));
    }
    let must = format!("must be one of {COLUMN_TYPES}");
    if column.type_.is_empty() {
        errors.push(FieldError::required(path.child("type"), must));
    } else if !COLUMN_TYPES.split(',').any(|t| t == column.type_) {
        errors.push(FieldError::invalid(
            path.child("type"),
            BadValue::Str(column.type_.clone()),
            must,
        ));
    }
    if let Some(format) = column.format.as_deref().filter(|f| !f.is_empty())
        && !COLUMN_FORMATS.split(',').any(|f| f == format)
    {
        errors.push(FieldError::invalid(
            path.child("format"),
            BadValue::Str(format.to_owned()),
            format!("must be one of {COLUMN_FORMATS}"),
        ));
    }
    if column.json_path.is_empty() {
        errors.push(FieldError::required(path.child("JSONPath"), ""));
    }
    errors
}
