//! [`on_every_backend!`](crate::on_every_backend): one test per case and per storage backend
//! of `apfkit-apiserver` (the in-memory model, the embedded SQLite store, a real etcd), for
//! the conformance suites of the crates that serve on it. The macro names
//! `apfkit_apiserver`'s backends, so the crate that calls it depends on `apfkit-apiserver`
//! (this crate does not).

/// Writes modules `memory`, `sqlite` and `etcd`, each with one multi-threaded tokio test per
/// case. A test starts the backend, hands it to `$start` (an async function taking the
/// backend, given by a path that resolves from inside those modules, such as `super::start`)
/// and calls the case (a function of the calling module, named as the test) with a reference
/// to what `$start` answered.
///
/// ```ignore
/// apfkit_test_support::on_every_backend!(super::start; run_test_get, run_test_watch);
/// ```
#[macro_export]
macro_rules! on_every_backend {
    ($start:path; $($case:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let running =
                        $start(apfkit_apiserver::storage::memory::MemoryBackend::default()).await;
                    super::$case(&running).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let dir = $crate::tempfile::tempdir().expect("a temporary directory");
                    let store = apfkit_apiserver::storage::sqlite::SqliteBackend::open(
                        &dir.path().join("state.db"),
                    )
                    .expect("opens");
                    let running = $start(store).await;
                    super::$case(&running).await;
                }
            )*
        }
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let etcd = $crate::etcd::Etcd::start();
                    let store = apfkit_apiserver::storage::etcd::EtcdBackend::connect(
                        std::slice::from_ref(&etcd.endpoint),
                    )
                    .await
                    .expect("connects");
                    let running = $start(store).await;
                    super::$case(&running).await;
                }
            )*
        }
    };
}
