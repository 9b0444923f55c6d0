//! A live cluster as input: its kubeconfig read as kubectl reads it (kube-rs: client
//! certificates, tokens, exec plugins), and the FlowSchemas and PriorityLevelConfigurations it
//! serves, read in the newest version of `flowcontrol.apiserver.k8s.io` that both the cluster
//! and apfkit know, for the commands that read an APF configuration.

use std::path::{Path, PathBuf};

use apfkit_dispatcher::release::Release;
use apfkit_runtime::version::compare_kube_aware_version_strings;
use apfkit_scheme::scheme::{Document, HubObject, Input, SCHEME, UnknownFields};
use kube::config::KubeConfigOptions;

use crate::failure::{Failure, Location};

/// The API group read.
const GROUP: &str = "flowcontrol.apiserver.k8s.io";

/// Objects per list page, as kubectl asks for them.
const PAGE: u32 = 500;

/// Objects of one kind at most: a bound on what a cluster (or something posing as one) can
/// make the command hold; real clusters have tens.
const MAX_OBJECTS: usize = 100_000;

/// The most bytes of one answer read: a page of 500 objects, or kube-apiserver's `/metrics`,
/// is a few MB.
const MAX_ANSWER: usize = 64 << 20;

/// How the commands that read an APF configuration reach a live cluster instead of files.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ClusterArgs {
    /// Read the configuration from the cluster of this kubeconfig, instead of -f files or
    /// the embedded default.
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// Read the configuration from the cluster of this kubeconfig context ($KUBECONFIG, else
    /// ~/.kube/config, unless --kubeconfig names the file).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// The Kubernetes release whose bootstrap configuration is the default (and lint's
    /// --with-bootstrap), 1.33 to 1.37 [default: a cluster's own release, else 1.37].
    #[arg(long, value_name = "VERSION")]
    kubernetes_version: Option<Release>,
}

impl ClusterArgs {
    /// Whether a cluster was asked for.
    pub fn asked(&self) -> bool {
        self.kubeconfig.is_some() || self.context.is_some()
    }

    /// The same release, without the cluster: for a configuration read from files.
    pub fn without_cluster(&self) -> ClusterArgs {
        ClusterArgs {
            kubernetes_version: self.kubernetes_version,
            ..ClusterArgs::default()
        }
    }

    /// The release asked for, or the newest.
    pub fn release(&self) -> Release {
        self.kubernetes_version.unwrap_or_default()
    }
}

/// A client for the cluster of `kubeconfig` (else `$KUBECONFIG`, else `~/.kube/config`) and
/// its `context` (else the current one).
pub async fn client(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Client, Failure> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    // Read within bounds, the files it names too (apfkit_apiserver::kubeconfig).
    let kubeconfig = match kubeconfig {
        Some(path) => apfkit_apiserver::kubeconfig::read(path)
            .map_err(|err| Failure::Invalid(format!("--kubeconfig {err}")))?,
        None => apfkit_apiserver::kubeconfig::from_environment()
            .map_err(|err| Failure::Invalid(format!("kubeconfig: {err}")))?,
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|err| Failure::Invalid(format!("kubeconfig: {err}")))?;
    kube::Client::try_from(config).map_err(|err| Failure::Invalid(format!("client: {err}")))
}

/// The cluster's APF objects, as hub objects, each with its URL as where it was read, and the
/// release to model: `--kubernetes-version`, else the cluster's own (the newest modelled, with
/// a warning, when apfkit does not model it).
pub fn read(args: &ClusterArgs) -> Result<(crate::input::Objects, Release), Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Invalid(format!("starting the runtime: {e}")))?;
    runtime.block_on(async {
        let client = client(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
        let release = match args.kubernetes_version {
            Some(release) => release,
            None => cluster_release(&client).await?,
        };
        let version = newest_version(&client).await?;
        let (mut levels, mut schemas) = (Vec::new(), Vec::new());
        for (plural, kind) in [
            ("prioritylevelconfigurations", "PriorityLevelConfiguration"),
            ("flowschemas", "FlowSchema"),
        ] {
            for (object, location) in list(&client, &version, plural, kind).await? {
                match object {
                    HubObject::PriorityLevelConfiguration(level) => levels.push((level, location)),
                    HubObject::FlowSchema(schema) => schemas.push((schema, location)),
                    HubObject::APIService(_) => {
                        return Err(Failure::at(&location, "the cluster answered an APIService"));
                    }
                }
            }
        }
        Ok(((levels, schemas), release))
    })
}

/// The release the cluster runs, from its `/version`.
async fn cluster_release(client: &kube::Client) -> Result<Release, Failure> {
    let info = client
        .apiserver_version()
        .await
        .map_err(|e| Failure::Invalid(format!("/version: {e}")))?;
    Ok(Release::parse(&info.git_version).unwrap_or_else(|error| {
        eprintln!(
            "warning: {}; modelling {}",
            crate::failure::printable(&error.to_string()),
            Release::NEWEST
        );
        Release::NEWEST
    }))
}

/// The newest version of the group the cluster serves and apfkit reads.
async fn newest_version(client: &kube::Client) -> Result<String, Failure> {
    let served = client
        .list_api_groups()
        .await
        .map_err(|e| Failure::Invalid(format!("discovery: {e}")))?
        .groups
        .into_iter()
        .find(|g| g.name == GROUP)
        .ok_or_else(|| Failure::Invalid(format!("the cluster does not serve {GROUP}")))?;
    let known: Vec<&str> = apfkit_types::KINDS
        .iter()
        .filter_map(|k| k.api_version.strip_prefix(GROUP)?.strip_prefix('/'))
        .collect();
    let served: Vec<String> = served.versions.into_iter().map(|v| v.version).collect();
    served
        .iter()
        .filter(|v| known.contains(&v.as_str()))
        .max_by(|a, b| compare_kube_aware_version_strings(a, b))
        .cloned()
        .ok_or_else(|| {
            Failure::Invalid(format!(
                "the cluster serves {GROUP} in {}, none of which apfkit reads ({})",
                served.join(", "),
                known.join(", ")
            ))
        })
}

/// Every object of `plural`, a page at a time, converted to the hub.
async fn list(
    client: &kube::Client,
    version: &str,
    plural: &str,
    kind: &str,
) -> Result<Vec<(HubObject, Location)>, Failure> {
    let path = format!("/apis/{GROUP}/{version}/{plural}");
    let mut objects = Vec::new();
    let mut next = String::new();
    loop {
        let mut url = format!("{path}?limit={PAGE}");
        if !next.is_empty() {
            url.push_str("&continue=");
            url.push_str(&form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>());
        }
        let text = get(client, &url).await?;
        let mut page: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| Failure::Invalid(format!("{path}: {e}")))?;
        let serde_json::Value::Array(items) = page["items"].take() else {
            return Err(Failure::Invalid(format!(
                "{path}: the answer is not a list"
            )));
        };
        for item in items {
            if objects.len() == MAX_OBJECTS {
                return Err(Failure::Invalid(format!(
                    "{path}: more than {MAX_OBJECTS} objects"
                )));
            }
            objects.push(hub(item, version, kind, &path)?);
        }
        next = page["metadata"]["continue"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if next.is_empty() {
            return Ok(objects);
        }
    }
}

/// A list item as a hub object (the items of a list carry no `apiVersion` and `kind`).
fn hub(
    mut value: serde_json::Value,
    version: &str,
    kind: &str,
    path: &str,
) -> Result<(HubObject, Location), Failure> {
    let name = value["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let location = Location {
        file: format!("{path}/{name}"),
        document: None,
    };
    let object = value
        .as_object_mut()
        .ok_or_else(|| Failure::at(&location, "a list item that is not an object"))?;
    object.insert("apiVersion".into(), format!("{GROUP}/{version}").into());
    object.insert("kind".into(), kind.into());
    let document = Document {
        index: 0,
        value,
        duplicate_fields: Vec::new(),
        unknown_fields: Vec::new(),
    };
    let (mut objects, warnings) = SCHEME
        .to_hub(Input::Value(document), UnknownFields::Warn)
        .map_err(|e| Failure::at(&location, e))?;
    for warning in warnings {
        crate::failure::warn(&location, &warning.to_string());
    }
    match objects.pop() {
        Some(object) if objects.is_empty() => Ok((object, location)),
        _ => Err(Failure::at(&location, "not one object")),
    }
}

/// The text the cluster answers a GET of `path` with, at most [`MAX_ANSWER`] bytes of it; an
/// answer other than 2xx is an error naming its status (and its text, when it can be read).
pub async fn get(client: &kube::Client, path: &str) -> Result<String, Failure> {
    use http_body_util::BodyExt as _;
    let failed = |e: &dyn std::fmt::Display| Failure::Invalid(format!("{path}: {e}"));
    let request = http::Request::get(path)
        .body(kube::client::Body::empty())
        .map_err(|e| failed(&e))?;
    let response = client.send(request).await.map_err(|e| failed(&e))?;
    let code = response.status();
    let body = http_body_util::Limited::new(response.into_body(), MAX_ANSWER)
        .collect()
        .await
        .map(|collected| String::from_utf8_lossy(&collected.to_bytes()).into_owned());
    if !code.is_success() {
        // The status says what went wrong; the body, if it can be read, says more.
        let text = body.unwrap_or_default();
        return Err(failed(&format!(
            "{code}: {}",
            crate::failure::printable(text.trim())
        )));
    }
    body.map_err(|e| failed(&e))
}
