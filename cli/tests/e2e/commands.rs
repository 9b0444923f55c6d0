//! Snapshot tests of every command and error path: `tests/cmd/*.toml` (arguments, input, exit
//! code) with their `.stdout` / `.stderr` snapshots. Refresh with `TRYCMD=overwrite`.

#[test]
fn commands() {
    trycmd::TestCases::new().case("tests/cmd/*.toml");
}
