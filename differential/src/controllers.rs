//! The three servers of the tests that hold apfkit's controllers to kube-controller-manager's:
//! the reference kube-apiserver with kube-controller-manager running some of its controllers,
//! and apfkit's server (every controller on) on its own etcd and on its embedded store.

use apfkit_server::{Config, Server, Storage};
use apfkit_test_support::etcd::Etcd;
use apfkit_test_support::reference::{ControllerManager, KubeApiserver, binary};

/// The reference with kube-controller-manager, and apfkit's server on etcd and embedded,
/// stopped when dropped (apfkit's after [`WithControllers::shutdown`]).
pub struct WithControllers {
    /// The reference kube-apiserver, with its etcd.
    pub reference: KubeApiserver,
    /// kube-controller-manager beside it.
    pub manager: ControllerManager,
    /// The etcd apfkit's first server stores in.
    pub etcd: Etcd,
    /// apfkit's server on [`WithControllers::etcd`].
    pub on_etcd: Server,
    /// apfkit's server on its embedded store.
    pub embedded: Server,
    /// Where apfkit's servers keep their data.
    _data: tempfile::TempDir,
}

impl WithControllers {
    /// Starts the three, kube-controller-manager with `--controllers=CONTROLLERS`.
    ///
    /// # Panics
    ///
    /// When one does not start: the reference without its binaries names the command that
    /// builds them.
    pub async fn start(controllers: &str) -> WithControllers {
        let reference = tokio::task::spawn_blocking(|| KubeApiserver::start(&[]))
            .await
            .expect("the reference starts");
        let manager =
            reference.start_controller_manager_with(&[&format!("--controllers={controllers}")]);
        let data = tempfile::tempdir().expect("a temporary folder");
        let etcd = Etcd::start_binary(&binary("etcd").display().to_string(), &[]);
        let mut on_etcd = Config::new(data.path().join("etcd"));
        on_etcd.storage = Storage::Etcd(vec![etcd.endpoint.clone()]);
        let on_etcd = apfkit_server::start(on_etcd)
            .await
            .expect("apfkit's server starts on etcd");
        let embedded = apfkit_server::start(Config::new(data.path().join("embedded")))
            .await
            .expect("apfkit's server starts on its embedded store");
        WithControllers {
            reference,
            manager,
            etcd,
            on_etcd,
            embedded,
            _data: data,
        }
    }

    /// Stops apfkit's two servers (the reference and its manager stop when dropped).
    pub async fn shutdown(self) {
        self.on_etcd.shutdown().await;
        self.embedded.shutdown().await;
    }
}
