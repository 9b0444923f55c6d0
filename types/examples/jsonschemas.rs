//! Prints every JSON Schema file of [`apfkit_types::json_schema::files`] as one JSON object keyed
//! by path. `cargo xtask codegen` runs it in a child process after regenerating the types, so
//! that the schemas come from the fresh types (xtask itself must build when they are stale).

fn main() {
    let files = apfkit_types::json_schema::files();
    match serde_json::to_string(&files) {
        Ok(text) => println!("{text}"),
        Err(err) => {
            eprintln!("jsonschemas: {err}");
            std::process::exit(1);
        }
    }
}
