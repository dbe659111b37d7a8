//! Where the hitmap lives (`EngineConfig::metadata_device`; Memshare's pass reads it): host
//! memory by default; `Auto` takes a GPU where one is usable and otherwise says why and uses
//! host memory; `Gpu` fails with the reason where none is. S3-FIFO's queues keep a frequency
//! sketch in host memory instead, unless `Gpu` is asked for. These run everywhere: each
//! asserts what this machine allows.

use std::sync::Arc;

use fridge_engine::{
    CleanerMode, Engine, EngineConfig, Eviction, ManualClock, MetadataDevice, Store, TenantId,
};

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
        // Sized for 65,536 items at 32 bits at first (it grows with the items held: below).
        assert_eq!(e.stats().metadata.bytes, 256 << 10);
        assert_eq!(e.metadata_note(), None);
    }
    // Sized for `hitmap_items` from the start where they are given: 32 bits for each of the
    // 512K items, 2 MiB.
    let given = EngineConfig { hitmap_items: 512 << 10, ..queues(MetadataDevice::Cpu) };
    let e = Engine::with_clock(given, Arc::new(ManualClock::new(1))).unwrap();
    assert_eq!(e.stats().metadata.bytes, 2 << 20);
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

#[test]
fn the_queues_sketch_and_ghosts_grow_with_the_items_held_and_are_counted() {
    let config = |hitmap_items| EngineConfig {
        max_memory: 32 << 20,
        segment_size: 1 << 20,
        cleaner: CleanerMode::Inline,
        hitmap_items,
        ..EngineConfig::default()
    };
    // Items of about 60 bytes, twice what the memory holds: the cleaner evicts, and tells
    // the sketch the items held at each pass.
    let run = |config| {
        let e = Engine::with_clock(config, Arc::new(ManualClock::new(1))).unwrap();
        let start = e.stats();
        let mut w = e.worker().unwrap();
        for i in 0..1_000_000u64 {
            w.store(Store::new(TenantId(0), &i.to_le_bytes(), &[1; 24])).unwrap();
        }
        e.validate();
        (start, e.stats())
    };
    let (start, grown) = run(config(0));
    assert_eq!(start.metadata.bytes, 256 << 10);
    assert!(grown.evictions > 0 && grown.items > 300_000, "{} held", grown.items);
    // 32 bits for each of the 300,000 or more items held, rounded up to a power of two, is
    // the most it may take: its size for the 512K items expected (one per 64 bytes), 2 MiB.
    assert_eq!(grown.metadata.bytes, 2 << 20);
    // The two ghosts (two filters each) start at their size for 65,536 items, 2^19 bits a
    // filter, and grow to 10 bits for each key a filter holds, half the items held, rounded
    // up to a power of two: at most their size for the 512K items expected, 2^22 bits.
    assert_eq!(start.ghost_bytes, 4 << 16);
    assert!(grown.ghost_bytes > start.ghost_bytes && grown.ghost_bytes <= 2 << 20);
    // Counted outside the arena as a sketch and ghosts of those sizes from the start are (the
    // cleaner's buffers, also counted there, differ a little between the two runs).
    let (_, fixed) = run(config(512 << 10));
    assert_eq!((fixed.metadata.bytes, fixed.ghost_bytes), (2 << 20, 2 << 20));
    let outside =
        |s: &fridge_engine::EngineStats| (s.overhead_bytes - s.index_bytes - s.ghost_bytes) as i64;
    let apart = outside(&grown) - outside(&fixed);
    assert!(apart.abs() < 256 << 10, "outside the arena: {apart} bytes apart");
}
