//! A plain axum router behind API Priority and Fairness, with kube-apiserver's default
//! configuration: the server answers on a free loopback port, the example asks it three
//! times as different users and prints what each answer's headers say.
//!
//! `cargo run -p apfkit-dispatcher --features tower --example apf_axum`

use std::io::{Read, Write};

use apfkit_dispatcher::bootstrap;
use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::guard::Guard;
use apfkit_dispatcher::layer::{ApfLayer, Attributes};
use axum::Router;
use axum::extract::Request;
use axum::routing::get;

/// Who asks comes from the `X-User` header here; a real server takes it from its
/// authentication.
fn classify(request: &Request) -> Attributes {
    let user = request
        .headers()
        .get("x-user")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("system:anonymous");
    let groups: &[&str] = match user {
        "admin" => &["system:masters", "system:authenticated"],
        "system:anonymous" => &["system:unauthenticated"],
        _ => &["system:authenticated"],
    };
    Attributes::resource(user, groups, "list", "", "pods", "default")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    // kube-apiserver's bootstrap configuration. Objects read from a server carry their uids,
    // which the answers' X-Kubernetes-PF-* headers name; these get their names as uids.
    let with_uid = |name: Option<String>| Some(format!("uid-of-{}", name.unwrap_or_default()));
    let levels = bootstrap::priority_levels()
        .iter()
        .cloned()
        .map(|mut level| {
            level.metadata.uid = with_uid(level.metadata.name.clone());
            level
        });
    let schemas = bootstrap::flow_schemas().iter().cloned().map(|mut schema| {
        schema.metadata.uid = with_uid(schema.metadata.name.clone());
        schema
    });
    let configuration =
        Configuration::new(levels.collect::<Vec<_>>(), schemas.collect::<Vec<_>>(), 600)
            .expect("the bootstrap configuration");
    let guard = Guard::new(configuration);
    let app = Router::new()
        .route(
            "/api/v1/namespaces/default/pods",
            get(|| async { "{\"items\":[]}" }),
        )
        .layer(ApfLayer::new(guard.clone(), classify));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    for user in ["admin", "alice", "system:anonymous"] {
        let head = tokio::task::spawn_blocking(move || ask(address, user))
            .await
            .expect("the client")?;
        let status = head.lines().next().unwrap_or_default().to_owned();
        let uids: Vec<&str> = head
            .lines()
            .filter(|l| l.to_ascii_lowercase().starts_with("x-kubernetes-pf-"))
            .collect();
        println!("{user}: {status} {uids:?}");
    }
    guard.inspect(|d| print!("{}", d.dump_priority_levels()));
    Ok(())
}

/// One GET as `user`; answers the response's head.
fn ask(address: std::net::SocketAddr, user: &str) -> std::io::Result<String> {
    let mut stream = std::net::TcpStream::connect(address)?;
    write!(
        stream,
        "GET /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: localhost\r\nX-User: {user}\r\n\
         Connection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .replace('\r', ""))
}
