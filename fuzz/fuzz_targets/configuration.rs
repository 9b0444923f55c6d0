//! Configuration digests: objects from documents, any server concurrency limit, then
//! classification, limits, borrowing and the dump table.
#![no_main]

use apfkit_scheme::scheme::{HubObject, ReadError, SCHEME, UnknownFields};
use apfkit_dispatcher::classify::Request;
use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::dispatch::Dispatcher;

mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let (mut levels, mut schemas) = (Vec::new(), Vec::new());
    let _ = SCHEME.read_values(rest, &common::limits(), |document| {
        if let Ok((objects, _)) = SCHEME.to_hub_value(&document.value, UnknownFields::Ignore) {
            for object in objects {
                match object {
                    HubObject::PriorityLevelConfiguration(level) => levels.push(level),
                    HubObject::FlowSchema(schema) => schemas.push(schema),
                    HubObject::APIService(_) => {}
                }
            }
        }
        Ok::<_, ReadError>(())
    });
    let server = [1, 2, 24, 600, 100_000, i32::MAX][usize::from(first) % 6];
    let Ok(config) = Configuration::new(levels, schemas, server) else {
        return;
    };
    let mut dispatcher = Dispatcher::new(config, std::time::Duration::ZERO);
    for (user, groups, resource) in [
        ("system:admin", vec!["system:masters"], "pods"),
        ("alice", vec!["system:authenticated"], "secrets"),
        ("system:node:n1", vec!["system:nodes"], "nodes"),
    ] {
        let request = Request {
            user,
            groups: &groups,
            verb: "list",
            is_resource_request: true,
            api_group: "",
            api_version: "v1",
            resource,
            subresource: "",
            namespace: "default",
            name: "",
            path: "",
        };
        let _ = dispatcher.classifier().classify(&request);
    }
    let _ = dispatcher.tick(std::time::Duration::from_secs(10));
    let _ = dispatcher.dump_priority_levels();
});
