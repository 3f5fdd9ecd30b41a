//! `topos algos`: every sampler, device and transport the build knows, from the registries.

use crate::ui::Ui;
use anyhow::Result;
use serde::Serialize;
use topos_train::SamplerInfo;

#[derive(clap::Args, Debug)]
pub struct Args {}

#[derive(Serialize)]
struct DeviceEntry {
    name: &'static str,
    summary: &'static str,
    /// Why it cannot be used on this machine now (`null`: usable).
    unavailable: Option<String>,
}

#[derive(Serialize)]
struct TransportEntry {
    name: &'static str,
    summary: &'static str,
}

#[derive(Serialize)]
struct Report {
    samplers: Vec<SamplerInfo>,
    devices: Vec<DeviceEntry>,
    transports: Vec<TransportEntry>,
}

pub fn run(_args: Args, ui: Ui) -> Result<()> {
    let report = Report {
        samplers: topos_train::SAMPLERS
            .iter()
            .map(|&s| SamplerInfo::of(s))
            .collect(),
        devices: topos_train::DEVICES
            .iter()
            .map(|d| DeviceEntry {
                name: d.name(),
                summary: d.summary(),
                unavailable: d.usable().err(),
            })
            .collect(),
        transports: topos_train::TRANSPORTS
            .iter()
            .map(|t| TransportEntry {
                name: t.name(),
                summary: t.summary(),
            })
            .collect(),
    };
    ui.result(&report, || {
        println!("samplers (--algo):");
        for s in &report.samplers {
            println!(
                "  {}{}  {}",
                s.name,
                if s.default { " (default)" } else { "" },
                s.summary
            );
            println!(
                "      {}; {}; devices: {}; private training: {}; state: {} ({} B/token)",
                match s.exactness {
                    topos_train::sampler::Exactness::Exact => "exact",
                    topos_train::sampler::Exactness::Approximate => "approximate",
                },
                s.determinism.describe(),
                s.devices.join(", "),
                if s.private_training { "yes" } else { "no" },
                s.state,
                s.state_bytes_per_token
            );
            println!("      when: {}", s.when_to_use);
            println!("      from: {}", s.reference);
            for x in &s.settings {
                let default = if x.cpu_default == x.default {
                    format!("default {}", x.shown_default)
                } else {
                    format!(
                        "default {} on the CPU, {} on the GPU",
                        x.cpu_default, x.default
                    )
                };
                println!(
                    "      setting {} {} ({default}): {}",
                    x.flag, x.choices, x.description
                );
            }
        }
        println!("devices (--device; auto tries them in this order):");
        for d in &report.devices {
            match &d.unavailable {
                None => println!("  {}  {}", d.name, d.summary),
                Some(why) => println!("  {}  {} [not usable here: {why}]", d.name, d.summary),
            }
        }
        println!("transports (--transport):");
        for t in &report.transports {
            println!("  {}  {}", t.name, t.summary);
        }
    })
}
