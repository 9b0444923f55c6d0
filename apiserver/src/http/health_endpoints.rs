//! The answers of kube-apiserver's health endpoints (k8s.io/apiserver `pkg/server/healthz`),
//! from the checks of `health.rs`.

use std::time::Duration;

use apfkit_runtime::field::go_quote;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use super::health::{Endpoint, HealthCheck};
use super::response::respond;
use super::server::ApiServer;

/// How long the storage may take to answer the `etcd` checks.
const STORAGE_TIMEOUT: Duration = Duration::from_secs(2);

/// A check's name and, once run, what it found.
struct Ran {
    name: String,
    result: Result<(), String>,
}

impl<H> ApiServer<H>
where
    H: apfkit_runtime::Object + Clone + Send + Sync + 'static,
{
    /// The names of `endpoint`'s checks, in kube-apiserver's order: the generic ones, the
    /// server's own, and `/readyz`'s `shutdown` last.
    fn check_names(&self, endpoint: Endpoint) -> Vec<&str> {
        let readyz = endpoint == Endpoint::Readyz;
        let mut names: Vec<&str> = vec!["ping", "log", "etcd"];
        if readyz {
            names.extend(["etcd-readiness", "informer-sync"]);
        }
        names.extend(self.health_checks.iter().map(HealthCheck::name));
        if readyz {
            names.push("shutdown");
        }
        names
    }

    /// The checks of `endpoint`, in kube-apiserver's order, run but those excluded.
    async fn run_checks(&self, endpoint: Endpoint, excluded: &[String]) -> Vec<(Ran, bool)> {
        let mut ran = Vec::new();
        for name in self.check_names(endpoint) {
            let skipped = excluded.iter().any(|e| e == name);
            let result = if skipped {
                Ok(())
            } else {
                self.check(name).await
            };
            ran.push((
                Ran {
                    name: name.to_owned(),
                    result,
                },
                skipped,
            ));
        }
        ran
    }

    /// The check `name` (one of [`ApiServer::check_names`]) run.
    async fn check(&self, name: &str) -> Result<(), String> {
        match name {
            "etcd" | "etcd-readiness" => {
                match tokio::time::timeout(STORAGE_TIMEOUT, self.objects().current_revision()).await
                {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(error)) => Err(error.to_string()),
                    Err(_) => Err(format!("the storage did not answer in {STORAGE_TIMEOUT:?}")),
                }
            }
            "informer-sync" if !self.informers.all_synced() => {
                Err("informers not started yet".to_owned())
            }
            "shutdown" if self.stopping.is_cancelled() => {
                Err("process is shutting down".to_owned())
            }
            other => self
                .health_checks
                .iter()
                .find(|c| c.name() == other)
                .map_or(Ok(()), HealthCheck::check),
        }
    }

    /// `/<endpoint>` (`check` empty) or `/<endpoint>/<check>`, asked with `query`.
    pub(super) async fn health(
        &self,
        endpoint: Endpoint,
        check: &str,
        query: Option<&str>,
    ) -> Response {
        if !check.is_empty() {
            if !self.check_names(endpoint).contains(&check) {
                return respond(404, "text/plain; charset=utf-8", "404 page not found\n");
            }
            return match self.check(check).await {
                Ok(()) => respond(200, "text/plain; charset=utf-8", "ok"),
                Err(why) => plain_error(format!("internal server error: {why}")),
            };
        }
        let pairs: Vec<(String, String)> =
            form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
        let verbose = pairs.iter().any(|(k, _)| k == "verbose");
        let excluded: Vec<String> = pairs
            .iter()
            .filter(|(k, _)| k == "exclude")
            .map(|(_, v)| v.clone())
            .collect();
        let ran = self.run_checks(endpoint, &excluded).await;
        let mut lines = String::new();
        let mut failed = false;
        for (check, skipped) in &ran {
            match (&check.result, skipped) {
                (_, true) => lines.push_str(&format!("[+]{} excluded: ok\n", check.name)),
                (Ok(()), false) => lines.push_str(&format!("[+]{} ok\n", check.name)),
                (Err(why), false) => {
                    tracing::info!("{} check {} failed: {why}", endpoint.name(), check.name);
                    lines.push_str(&format!("[-]{} failed: reason withheld\n", check.name));
                    failed = true;
                }
            }
        }
        let mut unmatched: Vec<&String> = excluded
            .iter()
            .filter(|e| !ran.iter().any(|(check, _)| check.name == **e))
            .collect();
        unmatched.sort();
        unmatched.dedup();
        if !unmatched.is_empty() {
            let quoted: Vec<String> = unmatched.iter().map(|e| go_quote(e)).collect();
            lines.push_str(&format!(
                "warn: some health checks cannot be excluded: no matches for {}\n",
                quoted.join(",")
            ));
        }
        if failed {
            return plain_error(format!("{lines}{} check failed", endpoint.name()));
        }
        let body = if verbose {
            format!("{lines}{} check passed\n", endpoint.name())
        } else {
            "ok".to_owned()
        };
        nosniff(respond(200, "text/plain; charset=utf-8", body))
    }
}

/// Go's `http.Error` with 500: the text and a newline.
fn plain_error(text: String) -> Response {
    let mut response = nosniff(respond(
        500,
        "text/plain; charset=utf-8",
        format!("{text}\n"),
    ));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response
}

fn nosniff(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}
