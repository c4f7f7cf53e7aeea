//! A generated distributed job (`gen-trace --ranks`): one rank runs a
//! known extra kernel in a known phase, and the job view finds that rank,
//! that phase and exactly that many ms, through the same library calls
//! the `summary` and `collectives` commands make.

use std::process::Command;

use libreyolo_core::input::{json_files_in, ranks};
use libreyolo_core::lens::{collectives, job};

#[test]
fn the_straggler_of_a_generated_job_its_phase_and_extra_ms_are_found_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("job");
    let st = Command::new(env!("CARGO_BIN_EXE_gen-trace"))
        .args([
            "--size",
            "1MB",
            "--ranks",
            "4",
            "--slow-rank",
            "2",
            "--slow-ms",
            "3.25",
            "--quiet",
            "--out",
        ])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(st.success());
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("job.expect.json")).unwrap())
            .unwrap();
    let files = json_files_in(&dir).unwrap();
    assert_eq!(files.len(), 4);
    let set = ranks::load(&files, &Default::default()).unwrap();
    assert_eq!(set.world_size, Some(4));
    let j = job::job(&set);
    assert_eq!(j.stragglers.len(), 1, "{:#?}", j.stragglers);
    let s = &j.stragglers[0];
    assert_eq!(s.rank, 2);
    assert_eq!(
        s.compute_excess_ms, 3.25,
        "its compute per step exceeds the others' by the extra kernel"
    );
    let phase = s.phase.as_ref().unwrap();
    assert_eq!((phase.name.as_str(), phase.extra_ms), ("optimizer", 3.25));
    // Found by who waits for whom: the extra kernel is in the lead-in of
    // the next step's first all-reduce (none follows the last step's).
    let steps = truth["steps"].as_f64().unwrap();
    let kernel = truth["slow_kernel"].as_str().unwrap();
    assert!(kernel.starts_with(s.why[0].name.as_str()), "{:?}", s.why);
    // Per step it arrived late at an all-reduce (every step but the last,
    // whose extra kernel no all-reduce follows): the extra kernel. (The
    // generated comm stream does not wait for the compute stream: the
    // next all-reduce can start before the extra kernel ends, cutting it.)
    assert!(steps >= 2.0);
    let expect = 3.25;
    let got = s.why[0].excess_ms_per_step;
    assert!(got <= expect + 1e-3 && got >= 0.98 * expect, "{got} vs {expect}");
    assert_eq!(j.critical_rank, Some(2));

    // Every rank records the same all-reduces, with their message sizes.
    let calls: Vec<collectives::RankCalls<'_>> = set
        .ranks
        .iter()
        .map(|r| collectives::RankCalls { rank: r.rank, calls: &r.input.profile.collectives })
        .collect();
    let c = collectives::collectives(&calls, set.world_size);
    let per_step = truth["allreduces_per_step"].as_u64().unwrap() as usize;
    let steps = truth["steps"].as_u64().unwrap() as usize;
    assert_eq!(c.groups.len(), 1);
    assert_eq!(c.groups[0].counts, vec![("allreduce".to_string(), per_step * steps)]);
    assert!(
        c.collectives.iter().all(|m| m.ranks.len() == 4
            && m.bytes.is_some_and(|b| b > 0)
            && m.busbw_gbps.is_some())
    );
    // The straggler's extra optimizer time delays its next step's
    // all-reduces (none in the first step): it is the last to arrive.
    let late: Vec<_> = c.collectives.iter().skip(per_step).collect();
    assert!(
        late.iter().all(|m| m.last_rank == Some(2) && m.skew_us.unwrap() >= 3250.0),
        "{late:#?}"
    );
}

/// `--slow-mode stretch` by 1%, 2% and 5% of the step: the straggler is
/// found by the waits it causes (the generator's own sum of the other
/// ranks' waits), with the stretched kernel as its first reason; without
/// the stretch nobody is named.
#[test]
fn a_stretched_kernel_before_the_all_reduces_is_found_by_the_waits_it_causes() {
    let gen_job = |ms: f64| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("job");
        let st = Command::new(env!("CARGO_BIN_EXE_gen-trace"))
            .args([
                "--size",
                "1MB",
                "--ranks",
                "4",
                "--slow-rank",
                "1",
                "--slow-mode",
                "stretch",
                "--quiet",
                "--slow-ms",
            ])
            .arg(ms.to_string())
            .arg("--out")
            .arg(&dir)
            .status()
            .unwrap();
        assert!(st.success());
        let truth: serde_json::Value =
            serde_json::from_slice(&std::fs::read(tmp.path().join("job.expect.json")).unwrap())
                .unwrap();
        let set = ranks::load(&json_files_in(&dir).unwrap(), &Default::default()).unwrap();
        (job::job(&set), truth)
    };
    let (calm, _) = gen_job(0.0);
    assert!(calm.stragglers.is_empty(), "{:#?}", calm.stragglers);
    assert_eq!(calm.critical_rank, None);
    let step = calm.step_ms;
    for pct in [1.0, 2.0, 5.0] {
        let d = step * pct / 100.0;
        let (j, truth) = gen_job(d);
        assert_eq!(j.stragglers.len(), 1, "{pct}%: {:#?}", j.stragglers);
        let s = &j.stragglers[0];
        assert_eq!(s.rank, 1);
        assert_eq!(j.critical_rank, Some(1));
        let want = truth["wait_caused_ms_per_step"].as_f64().unwrap();
        let got = s.wait_caused_ms_per_step.unwrap();
        assert!((got - want).abs() <= 0.1 * want, "{pct}%: caused {got} vs the generator's {want}");
        let kernel = truth["stretched_kernel"].as_str().unwrap();
        assert!(kernel.starts_with(s.why[0].name.trim_end_matches('…')), "{pct}%: {:?}", s.why);
        assert!(
            (s.why[0].excess_ms_per_step - d).abs() <= 0.1 * d,
            "{pct}%: {} vs {d}",
            s.why[0].excess_ms_per_step
        );
    }
}
