//! `write-profile <trace> <profile.json>`: analyses a trace through the
//! library and writes the resulting `profile.json`, so the benchmark can
//! time the readers on a profile made from a large generated trace
//! (`libreyolo profile summary --json` prints a summary, not a profile).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [trace, out] = args.as_slice() else {
        eprintln!("usage: write-profile <trace.json[.gz]> <profile.json>");
        return ExitCode::from(2);
    };
    let result =
        libreyolo_core::input::load(trace, Default::default()).map(|l| l.input).and_then(|input| {
            let json = serde_json::to_vec_pretty(&input.profile).map_err(|e| {
                libreyolo_core::Error::failed(format!("cannot encode the profile: {e}"))
            })?;
            libreyolo_core::files::write_atomic(std::path::Path::new(out), &json)
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("write-profile: {e}");
            ExitCode::from(1)
        }
    }
}
