//! Where the hitmap lives (`EngineConfig::metadata_device`; Memshare's pass reads it): host
//! memory by default; `Auto` takes a GPU where one is usable and otherwise says why and uses
//! host memory; `Gpu` fails with the reason where none is. S3-FIFO's queues keep a frequency
//! sketch in host memory instead, unless `Gpu` is asked for. These run everywhere: each
//! asserts what this machine allows.

use std::sync::Arc;

use fridge_engine::{CleanerMode, Engine, EngineConfig, Eviction, ManualClock, MetadataDevice};

fn engine(device: MetadataDevice, cleaner: CleanerMode) -> Result<Engine, String> {
    let config = EngineConfig {
        max_memory: 32 << 20,
        segment_size: 1 << 20,
        cleaner,
        metadata_device: device,
        eviction: Eviction::Memshare,
        ..EngineConfig::default()
    };
    Engine::with_clock(config, Arc::new(ManualClock::new(1))).map_err(|e| e.0)
}

#[test]
fn the_queues_keep_a_sketch_unless_a_gpu_is_asked_for() {
    let queues = |device| EngineConfig {
        max_memory: 32 << 20,
        segment_size: 1 << 20,
        cleaner: CleanerMode::Inline,
        metadata_device: device,
        ..EngineConfig::default()
    };
    for device in [MetadataDevice::Cpu, MetadataDevice::Auto] {
        let e = Engine::with_clock(queues(device), Arc::new(ManualClock::new(1))).unwrap();
        assert_eq!(e.stats().metadata.device, "sketch");
        // 32 bits for each of the 512K expected items (one per 64 bytes): 2 MiB.
        assert_eq!(e.stats().metadata.bytes, 2 << 20);
        assert_eq!(e.metadata_note(), None);
    }
    let gpu = Engine::with_clock(queues(MetadataDevice::Gpu), Arc::new(ManualClock::new(1)));
    match gpu {
        Ok(e) => assert!(e.stats().metadata.device.starts_with("gpu: ")),
        Err(e) => assert!(e.0.starts_with("no GPU hitmap: "), "{e}"),
    }
}

#[test]
fn the_cpu_is_the_default_and_says_so() {
    let e = engine(EngineConfig::default().metadata_device, CleanerMode::Inline).unwrap();
    assert_eq!(EngineConfig::default().metadata_device, MetadataDevice::Cpu);
    assert_eq!(e.stats().metadata.device, "cpu");
    assert_eq!(e.metadata_note(), None);
}

#[test]
fn auto_takes_a_usable_gpu_or_falls_back_with_the_reason_and_gpu_fails_without_one() {
    for cleaner in [CleanerMode::Inline, CleanerMode::Background] {
        let auto = engine(MetadataDevice::Auto, cleaner).unwrap();
        let device = auto.stats().metadata.device;
        match auto.metadata_note() {
            Some(note) => {
                eprintln!("no usable GPU here: {note}");
                assert_eq!(device, "cpu");
                assert!(note.starts_with("hitmap in host memory: "), "{note}");
                let err = engine(MetadataDevice::Gpu, cleaner).unwrap_err();
                assert!(err.starts_with("no GPU hitmap: "), "{err}");
                // The reason names what is missing, as the note does.
                assert!(
                    note.ends_with(err.trim_start_matches("no GPU hitmap: ")),
                    "{note} / {err}"
                );
            }
            None => {
                assert!(device.starts_with("gpu: "), "{device}");
                let gpu = engine(MetadataDevice::Gpu, cleaner).unwrap();
                assert!(gpu.stats().metadata.device.starts_with("gpu: "));
            }
        }
    }
}

#[test]
fn without_a_hitmap_no_device_is_asked_for() {
    let config = EngineConfig {
        max_memory: 32 << 20,
        segment_size: 1 << 20,
        hitmap_bits_per_item: 0,
        metadata_device: MetadataDevice::Gpu,
        ..EngineConfig::default()
    };
    let e = Engine::with_clock(config, Arc::new(ManualClock::new(1))).unwrap();
    assert_eq!(e.stats().metadata.device, "");
    assert_eq!(e.metadata_note(), None);
}

#[test]
fn the_device_names_parse_as_the_options_spell_them() {
    for (name, device) in
        [("cpu", MetadataDevice::Cpu), ("gpu", MetadataDevice::Gpu), ("auto", MetadataDevice::Auto)]
    {
        assert_eq!(name.parse::<MetadataDevice>(), Ok(device));
    }
    assert!("tpu".parse::<MetadataDevice>().unwrap_err().contains("cpu, gpu or auto"));
}
