//! The Widget conversion webhook: serves `api::SCHEME` over HTTPS until SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use apfkit_example_widgets::api::SCHEME;
use apfkit_https::webhook::{Webhook, WebhookConfig};
use clap::Parser;

/// Serves the Widget CRD's conversion webhook (ConversionReview v1 and v1beta1) over HTTPS.
///
/// `POST <path>` converts, `GET /healthz` answers `ok`. The certificate and key are reloaded
/// when their files change. SIGTERM or Ctrl-C stops accepting and lets requests finish.
#[derive(Debug, Parser)]
#[command(
    name = "widgets-webhook",
    after_help = "Example:\n  widgets-webhook --listen 127.0.0.1:9443 --cert tls.crt --key tls.key\n  curl --cacert tls.crt https://localhost:9443/healthz"
)]
struct Args {
    /// Address to listen on; port 0 picks a free port (printed on start).
    #[arg(long, default_value = "0.0.0.0:9443")]
    listen: SocketAddr,
    /// PEM certificate chain, leaf first.
    #[arg(long)]
    cert: PathBuf,
    /// PEM private key.
    #[arg(long)]
    key: PathBuf,
    /// Path of the conversion endpoint, as in the CRD's `clientConfig`.
    #[arg(long, default_value = "/convert")]
    path: String,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 32 << 20)]
    max_body: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("widgets-webhook: starting the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let mut config = WebhookConfig::new(args.listen, args.cert, args.key);
        config.path = args.path;
        config.max_body = args.max_body;
        let path = config.path.clone();
        let webhook = match Webhook::bind(config, &SCHEME).await {
            Ok(webhook) => webhook,
            Err(err) => {
                eprintln!("widgets-webhook: {err}");
                return ExitCode::FAILURE;
            }
        };
        eprintln!(
            "widgets-webhook: listening on https://{}{path}",
            webhook.local_addr()
        );
        match webhook.serve(apfkit_https::serve::interrupted()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("widgets-webhook: {err}");
                ExitCode::FAILURE
            }
        }
    })
}
