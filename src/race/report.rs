//! The report of a `--race-test` run: its exit code, and its text (a
//! table) or `--json` lines. Printed by main.rs.

use std::fmt::Write as _;

use crate::json;

use super::*;

impl Report {
    /// 0: the helper strategy (or the helper run) had no failure; 1: it had.
    pub fn exit_code(&self) -> i32 {
        match self {
            Report::InProcess { summaries, .. } => {
                let failed = summaries
                    .iter()
                    .any(|s| s.strategy == Strategy::Helper && s.ok != s.iterations);
                i32::from(failed)
            }
            Report::EndToEnd { failures, .. } => i32::from(*failures > 0),
        }
    }

    /// The output: a readable table, or JSON lines.
    pub fn render(&self) -> String {
        match self {
            Report::InProcess { config, summaries } => render_in_process(config, summaries),
            Report::EndToEnd {
                config,
                iterations,
                failures,
                groups,
            } => render_end_to_end(config, *iterations, *failures, groups),
        }
    }
}

fn cpu_text(cfg: &Config) -> &str {
    cfg.cpu.as_ref().map_or("all", |(t, _)| t.as_str())
}

fn render_in_process(cfg: &Config, summaries: &[Summary]) -> String {
    let mut out = String::new();
    if cfg.json {
        for s in summaries {
            let _ = writeln!(
                out,
                "{{\"strategy\":{},\"join\":{},\"cpu\":{},\"load\":{},\"iterations\":{},\
                 \"ok\":{},\"einval\":{},\"other\":{},\"retries_total\":{},\"retries_max\":{},\
                 \"waited\":{},\"p50_us\":{},\"p99_us\":{},\"max_us\":{}}}",
                json::string(s.strategy.name().as_bytes()),
                json::string(cfg.join.name().as_bytes()),
                json::string(cpu_text(cfg).as_bytes()),
                cfg.load,
                s.iterations,
                s.ok,
                s.einval,
                s.other,
                s.retries_total,
                s.retries_max,
                s.waited,
                s.p50_us,
                s.p99_us,
                s.max_us
            );
        }
        return out;
    }
    let _ = writeln!(
        out,
        "race test: join={} cpu={} load={} iterations={}",
        cfg.join.name(),
        cpu_text(cfg),
        cfg.load,
        cfg.iterations
    );
    let _ = writeln!(
        out,
        "{:<8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>8} {:>8} {:>8}",
        "strategy",
        "ok",
        "EINVAL",
        "other",
        "EINVAL%",
        "retries",
        "waited",
        "p50 us",
        "p99 us",
        "max us"
    );
    for s in summaries {
        // Per mille, rounded: integer formatting keeps float formatting out
        // of the binary.
        let runs = u64::from(s.iterations.max(1));
        let tenths = (u64::from(s.einval) * 1000 + runs / 2) / runs;
        let _ = writeln!(
            out,
            "{:<8} {:>8} {:>8} {:>8} {:>5}.{}% {:>4}/{:<4} {:>7} {:>8} {:>8} {:>8}",
            s.strategy.name(),
            s.ok,
            s.einval,
            s.other,
            tenths / 10,
            tenths % 10,
            s.retries_total,
            s.retries_max,
            s.waited,
            s.p50_us,
            s.p99_us,
            s.max_us
        );
    }
    out
}

fn render_end_to_end(cfg: &Config, iterations: u32, failures: u32, groups: &[Group]) -> String {
    let helper: Vec<String> = cfg
        .exec
        .iter()
        .flatten()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let helper = helper.join(" ");
    let mut out = String::new();
    if cfg.json {
        let groups: Vec<String> = groups
            .iter()
            .map(|g| {
                format!(
                    "{{\"status\":{},\"first_line\":{},\"count\":{}}}",
                    g.status,
                    json::string(g.first_line.as_bytes()),
                    g.count
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "{{\"helper\":{},\"cpu\":{},\"load\":{},\"iterations\":{iterations},\
             \"failures\":{failures},\"groups\":[{}]}}",
            json::string(helper.as_bytes()),
            json::string(cpu_text(cfg).as_bytes()),
            cfg.load,
            groups.join(",")
        );
        return out;
    }
    let _ = writeln!(
        out,
        "race test (end to end): {helper} true, cpu={} load={}\n{failures} of {iterations} runs failed",
        cpu_text(cfg),
        cfg.load
    );
    for g in groups {
        let _ = writeln!(
            out,
            "{:>6} x exit {:>3}: {}",
            g.count, g.status, g.first_line
        );
    }
    out
}
