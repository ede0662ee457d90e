//! Tests of the whole grammar through `parse` / `parse_unchecked`, plus the few helpers whose
//! edge cases are easier to reach directly (cstack names, timestamps).

use super::output::format_timestamp;
use super::stacks::parse_cstack;
use super::*;

const PID: u32 = 4242;
const NOW: i64 = 1_700_000_000; // 2023-11-14 22:13:20 UTC

fn no_env(_: &str) -> Option<String> {
    None
}

fn test_env(name: &str) -> Option<String> {
    match name {
        "HOME" => Some("/home/me".to_string()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

fn ok(command: &str) -> Args {
    match parse(command, &test_env, PID, NOW) {
        Ok(args) => args,
        Err(e) => panic!("{command:?} should parse: {e}"),
    }
}

fn err(command: &str) -> ArgError {
    match parse(command, &test_env, PID, NOW) {
        Ok(args) => panic!("{command:?} should fail, got {args:?}"),
        Err(e) => e,
    }
}

fn assert_err(command: &str, option: &str, value: &str, reason: &str) {
    let e = err(command);
    assert_eq!(
        (e.option.as_str(), e.value.as_str(), e.reason.as_str()),
        (option, value, reason),
        "for {command:?}"
    );
}

/// `option=value` fails, naming the option and the value.
fn rejects(option: &str, value: &str, reason: &str) {
    assert_err(&format!("{option}={value}"), option, value, reason);
}

fn cpu_ns(command: &str) -> Option<u64> {
    ok(command).cpu_interval_ns
}

fn memory(command: &str) -> Memory {
    ok(command).memory.expect("memory should be set")
}

// ---- defaults, tokens, keys ----

#[test]
fn default_args_hold_upstream_defaults() {
    let a = Args::default();
    assert_eq!(a.action, Action::None);
    assert_eq!(a.cpu_interval_ns, None);
    assert_eq!(a.cpu_engine, CpuEngine::Auto);
    assert_eq!(a.wall_interval_ns, None);
    assert!(!a.wall_collapsing);
    assert_eq!(a.wall_threads_per_tick, 16);
    assert!(!a.wall_sampler_jvmti);
    assert!(!a.wall_precheck);
    assert!(a.wall_skip_idle);
    assert_eq!(a.event, None);
    assert_eq!(a.interval, None);
    assert_eq!(a.memory, None);
    assert!(!a.generations);
    assert_eq!(a.nativemem, None);
    assert_eq!(a.natsock_ns, None);
    assert_eq!(a.cstack, CStack::Default);
    assert_eq!(a.cstack_requested, "default");
    assert_eq!(a.jstackdepth, 2048);
    assert_eq!(a.safemode, 0);
    assert_eq!(a.fjmethodid, FjMethodId::True);
    assert!(a.mcleanup);
    assert!(!a.lightweight);
    assert!(!a.remotesym);
    assert!(!a.jvmtistacks);
    assert!(!a.vtable_receiver);
    assert!(a.attributes.is_empty());
    assert!(a.filter);
    assert_eq!(a.file, None);
    assert_eq!(a.jfr_mask, 0);
    assert_eq!(a.log, None);
    assert_eq!(a.loglevel, None);
    assert!(!a.nosanity);
    assert_eq!(a.ring, Ring::Any);
    assert!(a.unknown.is_empty());
}

#[test]
fn empty_command_defaults_to_cpu_event() {
    let a = ok("");
    assert_eq!(a.action, Action::None);
    assert_eq!(a.event.as_deref(), Some("cpu"));
    assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
    assert_eq!(a.cpu_engine, CpuEngine::Auto);
    assert_eq!(a.wall_interval_ns, None);
    assert_eq!(a.mode_mask(), EM_CPU);
}

#[test]
fn empty_tokens_are_ignored() {
    assert_eq!(ok(",,cpu=5ms,,,"), ok("cpu=5ms"));
    assert_eq!(ok(",,,"), ok(""));
}

#[test]
fn keys_are_case_insensitive() {
    let a = ok("START,Cpu=5ms,WALL=~1ms,File=/tmp/x.jfr,CSTACK=vm,JStackDepth=7");
    assert_eq!(a.action, Action::Start);
    assert_eq!(a.cpu_interval_ns, Some(5_000_000));
    assert_eq!(a.wall_interval_ns, Some(1_000_000));
    assert!(a.wall_collapsing);
    assert_eq!(a.file.as_deref(), Some("/tmp/x.jfr"));
    assert_eq!(a.cstack, CStack::Vm);
    assert_eq!(a.jstackdepth, 7);
}

#[test]
fn keys_are_not_trimmed() {
    let a = ok("cpu=1ms, wall=1ms");
    assert_eq!(a.unknown, vec![" wall".to_string()]);
    assert_eq!(a.wall_interval_ns, None);
}

#[test]
fn each_action_key_sets_its_action() {
    assert_eq!(ok("start,file=f").action, Action::Start);
    assert_eq!(ok("resume,file=f").action, Action::Resume);
    assert_eq!(ok("stop").action, Action::Stop);
    assert_eq!(ok("check").action, Action::Check);
    assert_eq!(ok("status").action, Action::Status);
    assert_eq!(ok("list").action, Action::List);
    assert_eq!(ok("version").action, Action::Version);
    assert_eq!(ok("version=full").action, Action::Version);
    assert_eq!(ok("cpu").action, Action::None);
}

#[test]
fn last_action_wins() {
    assert_eq!(ok("start,stop").action, Action::Stop);
    assert_eq!(ok("status,resume,file=f").action, Action::Resume);
}

#[test]
fn unknown_keys_are_collected_in_order() {
    let a = ok("cpu,foo,lock=512k,Bar=1,=x");
    assert_eq!(a.unknown, vec!["foo", "lock", "Bar", ""]);
    assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
}

// ---- numbers and units ----

#[test]
fn time_units_scale_by_first_letter() {
    assert_eq!(cpu_ns("cpu=7"), Some(7));
    assert_eq!(cpu_ns("cpu=7n"), Some(7));
    assert_eq!(cpu_ns("cpu=7ns"), Some(7));
    assert_eq!(cpu_ns("cpu=100us"), Some(100_000));
    assert_eq!(cpu_ns("cpu=100u"), Some(100_000));
    assert_eq!(cpu_ns("cpu=10ms"), Some(10_000_000));
    assert_eq!(cpu_ns("cpu=10msec"), Some(10_000_000));
    assert_eq!(cpu_ns("cpu=2s"), Some(2_000_000_000));
    assert_eq!(cpu_ns("cpu=2seconds"), Some(2_000_000_000));
    assert_eq!(cpu_ns("cpu=3MS"), Some(3_000_000));
    assert_eq!(cpu_ns("cpu=3Us"), Some(3_000));
    assert_eq!(ok("wall=20ms").wall_interval_ns, Some(20_000_000));
    assert_eq!(ok("natsock=100us").natsock_ns, Some(100_000));
    assert_eq!(ok("natsock=1s").natsock_ns, Some(1_000_000_000));
}

#[test]
fn byte_units_scale_by_first_letter() {
    assert_eq!(memory("memory=100").interval, 100);
    assert_eq!(memory("memory=100b").interval, 100);
    assert_eq!(memory("memory=2k").interval, 2048);
    assert_eq!(memory("memory=2kb").interval, 2048);
    assert_eq!(memory("memory=2M").interval, 2 << 20);
    assert_eq!(memory("memory=1g").interval, 1 << 30);
    assert_eq!(ok("nativemem=512").nativemem, Some(512));
    assert_eq!(ok("nativemem=4k").nativemem, Some(4096));
    assert_eq!(ok("nativemem=1m").nativemem, Some(1 << 20));
    assert_eq!(ok("nativemem=1G").nativemem, Some(1 << 30));
}

#[test]
fn interval_accepts_time_and_byte_units() {
    let interval = |v: &str| ok(&format!("interval={v}")).interval;
    assert_eq!(interval("5"), Some(5));
    assert_eq!(interval("5n"), Some(5));
    assert_eq!(interval("5us"), Some(5_000));
    assert_eq!(interval("5ms"), Some(5_000_000)); // m is milliseconds here, not MiB
    assert_eq!(interval("5s"), Some(5_000_000_000));
    assert_eq!(interval("5b"), Some(5));
    assert_eq!(interval("5k"), Some(5 * 1024));
    assert_eq!(interval("5g"), Some(5 << 30));
}

#[test]
fn unknown_time_unit_is_rejected() {
    rejects("cpu", "10xs", "unknown time unit");
    rejects("wall", "5g", "unknown time unit");
    rejects("wall", "~5k", "unknown time unit");
    rejects("natsock", "1k", "unknown time unit");
    rejects("cpu", "10 ms", "unknown time unit");
}

#[test]
fn unknown_size_unit_is_rejected() {
    rejects("memory", "1s", "unknown size unit");
    rejects("memory", "1t:a", "unknown size unit");
    rejects("nativemem", "1u", "unknown size unit");
    rejects("interval", "1t", "unknown unit");
}

#[test]
fn overflowing_interval_is_rejected() {
    assert_eq!(
        cpu_ns("cpu=9223372036854775807"),
        Some(9_223_372_036_854_775_807)
    );
    rejects("cpu", "9223372036854775808", "number out of range");
    rejects("cpu", "99999999999999999999s", "number out of range");
    rejects("cpu", "10000000000s", "number out of range");
    rejects("interval", "9999999999g", "number out of range");
    rejects("memory", "9999999999g", "number out of range");
    rejects("nativemem", "0x7fffffffffffffffk", "number out of range");
    rejects("wall", "-99999999999999999999", "number out of range");
}

#[test]
fn negative_values_are_rejected() {
    rejects("cpu", "-1", "must be >= 0");
    rejects("cpu", "-5ms", "must be >= 0");
    rejects("wall", "-1", "must be >= 0");
    rejects("wall", "~-1", "must be >= 0");
    rejects("nativemem", "-1", "must be >= 0");
    rejects("natsock", "-5ms", "must be >= 0");
    rejects("memory", "-1", "must be >= 0");
    rejects("interval", "-1", "must be > 0");
}

#[test]
fn malformed_numbers_are_rejected() {
    rejects("cpu", "abc", "not a number");
    rejects("cpu", "ms", "not a number");
    rejects("cpu", "-", "not a number");
    rejects("cpu", "+", "not a number");
    rejects("wall", "~~1ms", "not a number");
    rejects("memory", "x:a", "not a number");
    rejects("nativemem", "k", "not a number");
    rejects("natsock", " ", "not a number");
    rejects("interval", "x", "not a number");
}

#[test]
fn numbers_follow_strtol_base_zero() {
    assert_eq!(cpu_ns("cpu=0x10"), Some(16));
    assert_eq!(cpu_ns("cpu=0X10us"), Some(16_000));
    assert_eq!(cpu_ns("cpu=010"), Some(8)); // leading 0 = octal, as upstream
    assert_eq!(cpu_ns("cpu=010ms"), Some(8_000_000));
    rejects("cpu", "08ms", "unknown time unit");
    rejects("cpu", "0x", "unknown time unit");
    // b is a hex digit, so no byte unit is read after a hex number ending in b.
    assert_eq!(memory("memory=0x1b").interval, 0x1b);
    assert_eq!(cpu_ns("cpu= \t5ms"), Some(5_000_000));
    assert_eq!(cpu_ns("cpu=+5ms"), Some(5_000_000));
}

#[test]
fn empty_number_reads_zero() {
    assert_eq!(cpu_ns("cpu="), Some(DEFAULT_CPU_INTERVAL_NS));
    assert_eq!(ok("wall=").wall_interval_ns, Some(DEFAULT_WALL_INTERVAL_NS));
    assert_eq!(memory("memory=").interval, 0);
    assert_eq!(ok("nativemem=").nativemem, Some(0));
    assert_eq!(ok("natsock=").natsock_ns, Some(0));
    rejects("interval", "", "must be > 0");
}

// ---- cpu / interval / event ----

#[test]
fn bare_cpu_or_cpu_zero_uses_default_interval() {
    assert_eq!(cpu_ns("cpu"), Some(DEFAULT_CPU_INTERVAL_NS));
    assert_eq!(cpu_ns("cpu=0"), Some(DEFAULT_CPU_INTERVAL_NS));
    assert_eq!(cpu_ns("cpu=0ms"), Some(DEFAULT_CPU_INTERVAL_NS));
}

#[test]
fn cpu_key_enables_vtable_receiver() {
    assert!(ok("cpu").vtable_receiver);
    assert!(ok("cpu=1ms").vtable_receiver);
    assert!(!ok("event=cpu").vtable_receiver);
    assert!(!ok("").vtable_receiver);
}

#[test]
fn jitdump_takes_a_directory_or_a_boolean() {
    use super::JitDumpDir;
    assert_eq!(ok("cpu").jitdump, None);
    assert_eq!(ok("cpu,jitdump").jitdump, Some(JitDumpDir::Default));
    assert_eq!(ok("cpu,jitdump=true").jitdump, Some(JitDumpDir::Default));
    assert_eq!(ok("cpu,jitdump=false").jitdump, None);
    assert_eq!(ok("cpu,jitdump=0").jitdump, None);
    assert_eq!(
        ok("cpu,jitdump=/var/tmp/jit").jitdump,
        Some(JitDumpDir::Dir("/var/tmp/jit".into()))
    );
    assert_eq!(
        ok("cpu,jitdump=dumps").jitdump,
        Some(JitDumpDir::Dir("dumps".into()))
    );
}

#[test]
fn perfmap_is_a_boolean_option() {
    assert!(!ok("cpu").perfmap);
    assert!(ok("cpu,perfmap").perfmap);
    assert!(ok("cpu,perfmap=true").perfmap);
    assert!(!ok("cpu,perfmap=false").perfmap);
    assert!(!ok("cpu,perfmap=0").perfmap);
}

#[test]
fn features_vtable_enables_vtable_receiver() {
    assert!(ok("wall=1ms,features=vtable").vtable_receiver);
    assert!(ok("wall,features=stats+VTABLE").vtable_receiver);
    let a = ok("wall,features=stats+comptask");
    assert!(!a.vtable_receiver);
    assert_eq!(a.unknown, vec!["features=stats", "features=comptask"]);
    assert!(ok("wall,features=").unknown.is_empty());
}

#[test]
fn interval_applies_when_cpu_has_no_positive_value() {
    assert_eq!(cpu_ns("cpu,interval=2ms"), Some(2_000_000));
    assert_eq!(cpu_ns("interval=2ms,cpu=0"), Some(2_000_000));
    assert_eq!(cpu_ns("interval=2ms"), Some(2_000_000)); // default event cpu
    assert_eq!(cpu_ns("event=itimer,interval=3ms"), Some(3_000_000));
    assert_eq!(cpu_ns("cpu=7ms,interval=2ms"), Some(7_000_000));
    assert_eq!(cpu_ns("interval=2ms,cpu=7ms"), Some(7_000_000));
}

#[test]
fn interval_must_be_positive() {
    assert_err("interval", "interval", "", "must be > 0");
    rejects("interval", "0", "must be > 0");
    rejects("interval", "0ms", "must be > 0");
    rejects("interval", "-5", "must be > 0");
}

#[test]
fn cpu_events_select_engine() {
    let a = ok("event=cpu");
    assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
    assert_eq!(a.cpu_engine, CpuEngine::Perf);
    assert_eq!(ok("cpu=1ms,event=CPU").cpu_engine, CpuEngine::Perf);
    assert_eq!(ok("cpu=1ms").cpu_engine, CpuEngine::Auto);
    assert_eq!(ok("cpu=100us").cpu_interval_ns, Some(100_000));
    assert_eq!(ok("interval=1ms").cpu_engine, CpuEngine::Auto);
    let a = ok("event=ctimer");
    assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
    assert_eq!(a.cpu_engine, CpuEngine::CTimer);
    let a = ok("event=itimer");
    assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
    assert_eq!(a.cpu_engine, CpuEngine::ITimer);
    assert_eq!(a.event.as_deref(), Some("itimer"));
    let a = ok("cpu=1ms,event=ctimer");
    assert_eq!(a.cpu_interval_ns, Some(1_000_000));
    assert_eq!(ok("event=ITIMER").cpu_engine, CpuEngine::ITimer);
}

#[test]
fn event_wall_enables_wall_only() {
    let a = ok("event=wall");
    assert_eq!(a.cpu_interval_ns, None);
    assert_eq!(a.wall_interval_ns, Some(DEFAULT_WALL_INTERVAL_NS));
    assert_eq!(a.mode_mask(), EM_WALL);
    assert_eq!(
        ok("event=wall,interval=20ms").wall_interval_ns,
        Some(20_000_000)
    );
}

#[test]
fn wall_takes_interval_only_when_an_event_is_named() {
    assert_eq!(
        ok("event=cpu,interval=5ms,wall").wall_interval_ns,
        Some(5_000_000)
    );
    assert_eq!(
        ok("cpu,interval=5ms,wall").wall_interval_ns,
        Some(DEFAULT_WALL_INTERVAL_NS)
    );
    // An explicit positive wall interval always wins (upstream would take `interval` here).
    assert_eq!(
        ok("event=cpu,interval=5ms,wall=7ms").wall_interval_ns,
        Some(7_000_000)
    );
}

#[test]
fn event_noop_and_perf_events() {
    let a = ok("event=noop");
    assert_eq!(a.cpu_interval_ns, None);
    assert_eq!(a.mode_mask(), 0);
    let a = ok("event=cache-misses,interval=1000");
    assert_eq!(a.perf_event(), Some("cache-misses"));
    assert_eq!(a.cpu_interval_ns, None);
    assert_eq!(a.interval, Some(1000));
    assert_eq!(a.mode_mask(), EM_CPU);
    assert_eq!(a.not_yet_sampled(), vec!["event"]);
    assert_eq!(ok("event=cpu").perf_event(), None);
}

#[test]
fn event_must_not_be_empty_or_duplicated() {
    assert_err("event", "event", "", "must not be empty");
    rejects("event", "", "must not be empty");
    assert_err(
        "event=cpu,event=wall",
        "event",
        "wall",
        "duplicate event argument",
    );
    // alloc is not an event of its own, so it never counts as a duplicate.
    assert_eq!(ok("event=cpu,event=alloc").event.as_deref(), Some("cpu"));
    assert_eq!(ok("event=alloc,event=cpu").event.as_deref(), Some("cpu"));
}

#[test]
fn alloc_is_memory_with_allocation_events() {
    let m = memory("cpu=1ms,alloc=512k");
    assert_eq!(
        (m.interval, m.allocations, m.liveness),
        (512 * 1024, true, false)
    );
    let m = memory("alloc");
    assert_eq!((m.interval, m.allocations), (DEFAULT_ALLOC_INTERVAL, true));
    assert_eq!(err("alloc=-1").option, "alloc");
}

#[test]
fn event_alloc_only_sets_memory_interval() {
    let a = parse("event=alloc", &no_env, PID, NOW).unwrap();
    assert_eq!(a.event, None);
    assert_eq!(a.cpu_interval_ns, None);
    assert_eq!(
        a.memory,
        Some(Memory {
            interval: 0,
            allocations: false,
            liveness: false,
            heap_usage: false,
            ratio: DEFAULT_LIVE_SAMPLES_RATIO,
        })
    );
    assert_eq!(a.mode_mask(), 0);
    // An earlier memory interval is kept.
    assert_eq!(memory("memory=1m,event=alloc").interval, 1 << 20);
    assert!(memory("memory=1m,event=alloc").allocations);
}

#[test]
fn event_alloc_alone_fails_start_with_no_events() {
    let e = err("start,event=alloc,file=/tmp/x.jfr");
    assert_eq!(e.option, "event");
    assert_eq!(e.reason, REASON_NO_EVENTS);
    assert!(e.is_state_error());
    assert!(e.to_string().contains("No profiling events specified"));
    assert_eq!(err("resume,event=noop,file=f").reason, REASON_NO_EVENTS);
    // Not at parse time for other actions.
    assert_eq!(ok("event=alloc").action, Action::None);
    assert_eq!(ok("check,event=alloc").action, Action::Check);
    // Something else enabled: fine.
    assert!(ok("start,event=alloc,cpu,file=f").cpu_interval_ns.is_some());
}

#[test]
fn default_event_is_cpu_only_when_nothing_is_enabled() {
    assert_eq!(ok("wall").cpu_interval_ns, None);
    assert_eq!(ok("memory").cpu_interval_ns, None);
    assert_eq!(ok("nativemem").cpu_interval_ns, None);
    assert_eq!(ok("event=alloc").cpu_interval_ns, None);
    assert_eq!(ok("generations=true").cpu_interval_ns, None);
    // natsock is not part of upstream's rule, so CPU sampling comes with it.
    let a = ok("natsock");
    assert_eq!(a.cpu_interval_ns, Some(DEFAULT_CPU_INTERVAL_NS));
    assert_eq!(a.event.as_deref(), Some("cpu"));
    assert_eq!(a.mode_mask(), EM_CPU | EM_NATIVESOCKET);
}

// ---- wall ----

#[test]
fn wall_options() {
    let a = ok("wall");
    assert_eq!(a.wall_interval_ns, Some(DEFAULT_WALL_INTERVAL_NS));
    assert!(!a.wall_collapsing);
    assert_eq!(
        ok("wall=0").wall_interval_ns,
        Some(DEFAULT_WALL_INTERVAL_NS)
    );
    let a = ok("wall=~");
    assert!(a.wall_collapsing);
    assert_eq!(a.wall_interval_ns, Some(DEFAULT_WALL_INTERVAL_NS));
    let a = ok("wall=~10ms");
    assert!(a.wall_collapsing);
    assert_eq!(a.wall_interval_ns, Some(10_000_000));
    // Collapsing sticks once requested, as upstream.
    assert!(ok("wall=~1ms,wall=2ms").wall_collapsing);
}

#[test]
fn walltpt_must_be_a_positive_integer() {
    assert_eq!(ok("walltpt=4").wall_threads_per_tick, 4);
    assert_eq!(
        ok("walltpt=2147483647").wall_threads_per_tick,
        2_147_483_647
    );
    assert_err("walltpt", "walltpt", "", "must be > 0");
    rejects("walltpt", "0", "must be > 0");
    rejects("walltpt", "-3", "must be > 0");
    rejects("walltpt", "abc", "not a number");
    rejects("walltpt", "4x", "not a number");
    rejects("walltpt", "2147483648", "number out of range");
}

#[test]
fn wallsampler_picks_jvmti_by_first_letter() {
    assert!(ok("wallsampler=jvmti").wall_sampler_jvmti);
    assert!(ok("wallsampler=j").wall_sampler_jvmti);
    assert!(ok("wallsampler=JVMTI").wall_sampler_jvmti);
    assert!(!ok("wallsampler=asgct").wall_sampler_jvmti);
    assert!(!ok("wallsampler=other").wall_sampler_jvmti);
    assert!(!ok("wallsampler=").wall_sampler_jvmti);
    assert!(ok("wallsampler=jvmti,wallsampler").wall_sampler_jvmti);
}

#[test]
fn wallidle_is_on_unless_false_or_zero() {
    assert!(ok("wall").wall_skip_idle);
    assert!(ok("wall,wallidle").wall_skip_idle);
    assert!(!ok("wall,wallidle=false").wall_skip_idle);
    assert!(!ok("wall,wallidle=0").wall_skip_idle);
}

#[test]
fn wallprecheck_is_off_only_for_false_or_zero() {
    assert!(!ok("").wall_precheck);
    assert!(ok("wallprecheck").wall_precheck);
    assert!(ok("wallprecheck=true").wall_precheck);
    assert!(!ok("wallprecheck=false").wall_precheck);
    assert!(!ok("wallprecheck=FALSE").wall_precheck);
    assert!(!ok("wallprecheck=0").wall_precheck);
    assert!(ok("wallprecheck=no").wall_precheck); // upstream quirk
}

// ---- memory, generations, nativemem, natsock ----

#[test]
fn bare_memory_samples_allocations_and_liveness() {
    assert_eq!(
        memory("memory"),
        Memory {
            interval: DEFAULT_ALLOC_INTERVAL,
            allocations: true,
            liveness: true,
            heap_usage: false,
            ratio: DEFAULT_LIVE_SAMPLES_RATIO,
        }
    );
    let m = memory("memory=1m");
    assert!(m.allocations && m.liveness && !m.heap_usage);
    assert_eq!(ok("memory").mode_mask(), EM_ALLOC);
}

#[test]
fn memory_flags_select_what_is_recorded() {
    let flags = |cmd: &str| {
        let m = memory(cmd);
        (m.allocations, m.liveness, m.heap_usage)
    };
    assert_eq!(flags("memory=1m:a"), (true, false, false));
    assert_eq!(flags("memory=1m:l"), (false, true, false));
    assert_eq!(flags("memory=256:L"), (false, true, true));
    assert_eq!(flags("memory=1m:al"), (true, true, false));
    assert_eq!(flags("memory=1m:aL"), (true, true, true));
    assert_eq!(flags("memory=1m:lL"), (false, true, false)); // l wins, as upstream
    assert_eq!(flags("memory=1m:"), (false, false, false)); // empty flags: nothing
    assert_eq!(flags("memory=1m:x"), (false, false, false));
    assert_eq!(memory("memory=:a").interval, 0);
    // Flags accumulate over repeated memory keys, as upstream.
    assert_eq!(flags("memory=1m:a,memory=2m:l"), (true, true, false));
    assert_eq!(memory("memory=1m:a,memory=2m:l").interval, 2 << 20);
}

#[test]
fn memory_ratio_must_be_within_bounds() {
    assert_eq!(memory("memory=524288:L:0.5").ratio, 0.5);
    assert_eq!(memory("memory=1m:l:0.01").ratio, 0.01);
    assert_eq!(memory("memory=1m:l:1").ratio, 1.0);
    assert_eq!(memory("memory=1m:al:1.0").ratio, 1.0);
    rejects("memory", "1m:l:0", "ratio must be between 0.01 and 1");
    rejects("memory", "1m:l:0.001", "ratio must be between 0.01 and 1");
    rejects("memory", "1m:L:1.5", "ratio must be between 0.01 and 1");
    rejects("memory", "1m:l:-0.5", "ratio must be between 0.01 and 1");
    rejects("memory", "1m:l:abc", "not a number");
    rejects("memory", "1m:l:", "not a number");
    rejects("memory", "1m:l:NaN", "ratio must be between 0.01 and 1");
    rejects("memory", "1m:l:inf", "ratio must be between 0.01 and 1");
}

#[test]
fn memory_ratio_is_ignored_without_liveness() {
    let m = memory("memory=1m:a:7");
    assert!(m.allocations && !m.liveness);
    assert_eq!(m.ratio, DEFAULT_LIVE_SAMPLES_RATIO);
    // Upstream's own doc example: the third section is "L:0.1", the flags are just "a".
    let m = memory("memory=1048576:a:L:0.1");
    assert_eq!(
        (m.interval, m.allocations, m.liveness),
        (1_048_576, true, false)
    );
}

#[test]
fn generations_true_tracks_liveness_with_conservative_interval() {
    let a = ok("generations=true");
    assert!(a.generations);
    assert_eq!(
        a.memory,
        Some(Memory {
            interval: GENERATIONS_ALLOC_INTERVAL,
            allocations: false,
            liveness: true,
            heap_usage: false,
            ratio: DEFAULT_LIVE_SAMPLES_RATIO,
        })
    );
    assert_eq!(a.mode_mask(), EM_ALLOC);
    assert!(ok("generations=TRUE").generations);
    // An interval set before is kept; one set after replaces the 4 MiB.
    assert_eq!(memory("memory=128,generations=true").interval, 128);
    assert_eq!(memory("generations=true,memory=128").interval, 128);
    assert_eq!(
        memory("memory=0,generations=true").interval,
        GENERATIONS_ALLOC_INTERVAL
    );
    assert_eq!(
        memory("event=alloc,generations=true").interval,
        GENERATIONS_ALLOC_INTERVAL
    );
}

#[test]
fn generations_true_adds_liveness_to_any_memory_flags() {
    // Allocations only, then generations: both, at the memory interval.
    let m = memory("memory=256k:a,generations=true");
    assert_eq!(
        (m.interval, m.allocations, m.liveness, m.heap_usage),
        (262_144, true, true, false)
    );
    // Either order; the ratio stays the default (it is only read with `l`/`L`).
    let m = memory("generations=true,memory=256k:a");
    assert_eq!((m.allocations, m.liveness), (true, true));
    assert_eq!(m.ratio, DEFAULT_LIVE_SAMPLES_RATIO);
    // `L` keeps its heap usage; an empty flags section gets liveness alone.
    assert!(memory("memory=1m:L:0.5,generations=true").heap_usage);
    let m = memory("memory=1m:,generations=true");
    assert_eq!((m.allocations, m.liveness), (false, true));
    // Without it, `a` is allocations only; `generations=false` adds nothing.
    assert!(!memory("memory=256k:a").liveness);
    assert!(!memory("memory=256k:a,generations=false").liveness);
    assert!(!memory("generations=true,generations=false,memory=256k:a").liveness);
}

#[test]
fn generations_needs_the_value_true() {
    assert!(!ok("generations").generations);
    assert_eq!(ok("generations").memory, None);
    assert!(!ok("generations=yes").generations);
    assert!(!ok("generations=1").generations);
    assert!(!ok("generations=true,generations=false").generations);
}

#[test]
fn nativemem_options() {
    assert_eq!(ok("nativemem").nativemem, Some(0));
    assert_eq!(ok("nativemem=0").nativemem, Some(0));
    assert_eq!(ok("nativemem=512").nativemem, Some(512));
    assert_eq!(ok("nativemem").mode_mask(), EM_NATIVEMEM);
}

#[test]
fn natsock_options() {
    assert_eq!(ok("natsock").natsock_ns, Some(0));
    assert_eq!(ok("natsock=0").natsock_ns, Some(0));
    assert_eq!(ok("natsock=100us").natsock_ns, Some(100_000));
    assert_eq!(ok("cpu").natsock_ns, None);
}

// ---- stacks and methods ----

#[test]
fn cstack_modes_parse_and_echo_the_request() {
    let mode = |v: &str| ok(&format!("cstack={v}")).cstack;
    assert_eq!(mode("fp"), CStack::Fp);
    assert_eq!(mode("dwarf"), CStack::Dwarf);
    assert_eq!(mode("lbr"), CStack::Lbr);
    assert_eq!(mode("vm"), CStack::Vm);
    assert_eq!(mode("vmx"), CStack::Vmx);
    assert_eq!(mode("no"), CStack::No);
    assert_eq!(mode("default"), CStack::Default);
    assert_eq!(mode("VM"), CStack::Vm);
    assert_eq!(mode("bogus"), CStack::No);
    assert_eq!(mode(""), CStack::No);
    assert_eq!(ok("cstack=VMX").cstack_requested, "VMX");
    assert_eq!(ok("cstack=bogus").cstack_requested, "bogus");
    assert_eq!(ok("cstack=").cstack_requested, "");
    assert_eq!(ok("cpu").cstack_requested, "default");
    // A bare key changes nothing.
    let a = ok("cstack=fp,cstack");
    assert_eq!((a.cstack, a.cstack_requested.as_str()), (CStack::Fp, "fp"));
}

#[test]
fn cstack_names_round_trip() {
    for mode in [
        CStack::Default,
        CStack::No,
        CStack::Fp,
        CStack::Dwarf,
        CStack::Lbr,
        CStack::Vm,
        CStack::Vmx,
    ] {
        assert_eq!(parse_cstack(mode.as_str()), mode);
    }
}

#[test]
fn jstackdepth_must_be_a_positive_integer() {
    assert_eq!(ok("jstackdepth=64").jstackdepth, 64);
    assert_eq!(ok("jstackdepth=+64").jstackdepth, 64);
    assert_err("jstackdepth", "jstackdepth", "", "must be > 0");
    rejects("jstackdepth", "0", "must be > 0");
    rejects("jstackdepth", "-1", "must be > 0");
    rejects("jstackdepth", "", "not a number");
    rejects("jstackdepth", "abc", "not a number");
    rejects("jstackdepth", "0x10", "not a number");
    rejects("jstackdepth", "99999999999", "number out of range");
}

#[test]
fn safemode_bits() {
    assert_eq!(ok("safemode").safemode, SAFEMODE_ALL);
    assert_eq!(ok("safemode=0").safemode, 0);
    assert_eq!(ok("safemode=7").safemode, 7);
    assert_eq!(ok("safemode=0x1f").safemode, 31);
    assert_eq!(ok("safemode=4294967295").safemode, u32::MAX);
    rejects("safemode", "x", "not a number");
    rejects("safemode", "7x", "not a number");
    rejects("safemode", "-1", "must be >= 0");
    rejects("safemode", "4294967296", "number out of range");
}

#[test]
fn fjmethodid_accepts_true_false_lazy() {
    assert_eq!(ok("").fjmethodid, FjMethodId::True);
    assert_eq!(ok("fjmethodid=true").fjmethodid, FjMethodId::True);
    assert_eq!(ok("fjmethodid=false").fjmethodid, FjMethodId::False);
    assert_eq!(ok("fjmethodid=lazy").fjmethodid, FjMethodId::Lazy);
    assert_eq!(ok("fjmethodid=LAZY").fjmethodid, FjMethodId::Lazy);
    assert_eq!(ok("fjmethodid=False").fjmethodid, FjMethodId::False);
    assert_eq!(
        ok("fjmethodid=false,fjmethodid").fjmethodid,
        FjMethodId::False
    );
    rejects("fjmethodid", "yes", "expected true, false or lazy");
    rejects("fjmethodid", "", "expected true, false or lazy");
    rejects("fjmethodid", "1", "expected true, false or lazy");
}

// ---- booleans ----

#[test]
fn mcleanup_remotesym_nosanity_are_off_only_for_n_f_0() {
    type Get = fn(&Args) -> bool;
    let cases: [(&str, Get, bool); 3] = [
        ("mcleanup", |a| a.mcleanup, true),
        ("remotesym", |a| a.remotesym, false),
        ("nosanity", |a| a.nosanity, false),
    ];
    for (key, get, default) in cases {
        assert_eq!(get(&ok("")), default, "{key} default");
        assert!(get(&ok(key)), "bare {key}");
        for on in ["true", "yes", "1", "on", "off", "", "x", "True"] {
            assert!(get(&ok(&format!("{key}={on}"))), "{key}={on}");
        }
        for off in ["false", "no", "0", "f", "n", "FALSE", "No", "nope"] {
            assert!(!get(&ok(&format!("{key}={off}"))), "{key}={off}");
        }
    }
}

#[test]
fn jvmtistacks_is_on_only_for_y_t_1() {
    assert!(!ok("").jvmtistacks);
    assert!(ok("jvmtistacks").jvmtistacks);
    for on in ["true", "yes", "1", "t", "Y", "TRUE"] {
        assert!(ok(&format!("jvmtistacks={on}")).jvmtistacks, "{on}");
    }
    for off in ["false", "no", "0", "", "on", "x"] {
        assert!(!ok(&format!("jvmtistacks={off}")).jvmtistacks, "{off}");
    }
}

#[test]
fn lightweight_needs_a_y_or_t_value() {
    assert!(!ok("lightweight").lightweight);
    assert!(ok("lightweight=yes,lightweight").lightweight); // bare changes nothing
    for on in ["yes", "true", "t", "y", "Yes", "TRUE"] {
        assert!(ok(&format!("lightweight={on}")).lightweight, "{on}");
    }
    for off in ["no", "false", "1", "0", "", "on"] {
        assert!(!ok(&format!("lightweight={off}")).lightweight, "{off}");
    }
}

// ---- attributes, filter ----

#[test]
fn attributes_split_on_semicolons_and_accumulate() {
    assert_eq!(
        ok("attributes=tag1;tag2;tag3").attributes,
        ["tag1", "tag2", "tag3"]
    );
    assert_eq!(
        ok("attributes=a,attributes=b;c").attributes,
        ["a", "b", "c"]
    );
    assert_eq!(ok("attributes=a;;b").attributes, ["a", "", "b"]);
    assert_eq!(ok("attributes=").attributes, [""]);
    assert!(ok("attributes").attributes.is_empty());
}

#[test]
fn filter_is_on_unless_given_empty() {
    assert!(ok("").filter);
    assert!(ok("filter=0").filter);
    assert!(ok("filter=anything").filter);
    assert!(!ok("filter=").filter);
    assert!(!ok("filter").filter);
    assert!(ok("filter=,filter=1").filter);
}

// ---- file ----

#[test]
fn file_is_required_for_start_and_resume() {
    assert_err("start", "file", "", REASON_FILE_REQUIRED);
    assert_err("resume,cpu", "file", "", REASON_FILE_REQUIRED);
    assert!(err("start").is_state_error());
    for action in ["stop", "check", "status", "list", "version", "cpu"] {
        assert_eq!(ok(action).file, None, "{action}");
    }
    // A pattern that expands to nothing counts as missing.
    assert_err("start,file=%", "file", "", REASON_FILE_REQUIRED);
    // The events check comes first, as upstream.
    assert_eq!(err("start,event=noop").reason, REASON_NO_EVENTS);
}

#[test]
fn parse_unchecked_skips_start_checks() {
    let a = parse_unchecked("start,event=alloc", &no_env, PID, NOW).unwrap();
    assert_eq!(a.action, Action::Start);
    assert_eq!(a.validate_for_start().unwrap_err().reason, REASON_NO_EVENTS);
    let a = parse_unchecked("start,cpu", &no_env, PID, NOW).unwrap();
    assert_eq!(a.validate_for_start().unwrap_err().option, "file");
    let a = parse_unchecked("start,cpu,file=x", &no_env, PID, NOW).unwrap();
    assert_eq!(a.validate_for_start(), Ok(()));
}

#[test]
fn file_must_not_be_empty() {
    rejects("file", "", "must not be empty");
    assert_err("file", "file", "", "must not be empty");
    assert_err("status,file=", "file", "", "must not be empty");
}

#[test]
fn file_pattern_expands_pid_time_and_env() {
    let file = |v: &str| ok(&format!("file={v}")).file.unwrap();
    assert_eq!(file("/tmp/plain.jfr"), "/tmp/plain.jfr");
    assert_eq!(file("/tmp/p-%p.jfr"), "/tmp/p-4242.jfr");
    assert_eq!(file("/tmp/t-%t.jfr"), "/tmp/t-20231114-221320.jfr");
    assert_eq!(file("%{HOME}/x-%p-%t"), "/home/me/x-4242-20231114-221320");
}

fn env_with_odd_values(name: &str) -> Option<String> {
    match name {
        "HOME" => Some("/home/me".to_string()),
        "SLASHES" => Some("../../etc/cron.d/x".to_string()),
        "DOT" => Some(".".to_string()),
        "DOTDOT" => Some("..".to_string()),
        "DOTS" => Some("...".to_string()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

#[test]
fn an_env_value_is_one_file_name_except_at_the_start() {
    let file = |v: &str| {
        parse(&format!("file={v}"), &env_with_odd_values, PID, NOW)
            .unwrap()
            .file
            .unwrap()
    };
    // At the very start the value is a path: the directory the environment names.
    assert_eq!(file("%{HOME}/r.jfr"), "/home/me/r.jfr");
    assert_eq!(file("%{SLASHES}.jfr"), "../../etc/cron.d/x.jfr");
    // Anywhere else it cannot leave or add directories.
    assert_eq!(file("/r/%{SLASHES}.jfr"), "/r/.._.._etc_cron.d_x.jfr");
    assert_eq!(file("/r/%{HOME}/a.jfr"), "/r/_home_me/a.jfr");
    assert_eq!(file("%p%{HOME}"), "4242_home_me");
    assert_eq!(file("/r/%{DOTDOT}/a.jfr"), "/r/__/a.jfr");
    assert_eq!(file("/r/%{DOT}/a.jfr"), "/r/_/a.jfr");
    assert_eq!(file("/r/%{DOTS}/a.jfr"), "/r/.../a.jfr");
    assert_eq!(file("/r/x%{DOTDOT}"), "/r/x__");
}

#[test]
fn an_unset_or_empty_env_variable_is_an_error_naming_it() {
    for (pattern, reason) in [
        (
            "/r/%{UNSET}/a.jfr",
            "environment variable UNSET of %{UNSET} is not set",
        ),
        (
            "%{UNSET}",
            "environment variable UNSET of %{UNSET} is not set",
        ),
        (
            "/r/%{EMPTY}/a.jfr",
            "environment variable EMPTY of %{EMPTY} is empty",
        ),
    ] {
        for command in [
            format!("file={pattern}"),
            format!("start,cpu,file={pattern}"),
        ] {
            let e = parse(&command, &env_with_odd_values, PID, NOW).unwrap_err();
            assert_eq!((e.option.as_str(), e.value.as_str()), ("file", pattern));
            assert_eq!(e.reason, reason);
            assert!(!e.is_state_error());
        }
    }
}

#[test]
fn file_pattern_keeps_upstream_edge_cases() {
    let file = |v: &str| ok(&format!("file={v}")).file.unwrap();
    assert_eq!(file("a%%b"), "a%b");
    assert_eq!(file("a%xb"), "axb");
    assert_eq!(file("a%éb"), "aéb");
    assert_eq!(file("ab%"), "ab");
    assert_eq!(file("%{HOME"), "{HOME");
    assert_eq!(file("%{}x"), "{}x");
    let long = "N".repeat(128);
    assert_eq!(file(&format!("%{{{long}}}")), format!("{{{long}}}"));
    let env_127 = |name: &str| (name.len() == 127).then(|| "v".to_string());
    let a = parse(&format!("file=%{{{}}}", "N".repeat(127)), &env_127, 1, 0).unwrap();
    assert_eq!(a.file.as_deref(), Some("v"));
}

#[test]
fn timestamp_is_formatted_like_upstream_in_utc() {
    assert_eq!(format_timestamp(0), "19700101-000000");
    assert_eq!(format_timestamp(-1), "19691231-235959");
    assert_eq!(format_timestamp(951_782_400), "20000229-000000");
    assert_eq!(format_timestamp(NOW), "20231114-221320");
    assert_eq!(format_timestamp(4_102_444_799), "20991231-235959");
    // Extremes must not panic.
    let _ = format_timestamp(i64::MIN);
    let _ = format_timestamp(i64::MAX);
}

// ---- jfr, logging, ring ----

#[test]
fn jfr_mask_options() {
    assert_eq!(ok("jfr").jfr_mask, 0);
    assert_eq!(ok("jfr=15").jfr_mask, 15);
    assert_eq!(ok("jfr=0x8").jfr_mask, JFR_NO_CPU_LOAD);
    assert_eq!(ok("jfr=3,jfr").jfr_mask, 3);
    rejects("jfr", "abc", "not a number");
    rejects("jfr", "", "not a number");
    rejects("jfr", "-1", "must be >= 0");
}

#[test]
fn log_and_loglevel() {
    assert_eq!(ok("log=/tmp/p.log").log.as_deref(), Some("/tmp/p.log"));
    assert_eq!(ok("log=").log, None);
    assert_eq!(ok("log").log, None);
    let level = |v: &str| ok(&format!("loglevel={v}")).loglevel;
    assert_eq!(level("TRACE"), Some(LogLevel::Trace));
    assert_eq!(level("debug"), Some(LogLevel::Debug));
    assert_eq!(level("Info"), Some(LogLevel::Info));
    assert_eq!(level("warn"), Some(LogLevel::Warn));
    assert_eq!(level("ERROR"), Some(LogLevel::Error));
    assert_eq!(level("none"), Some(LogLevel::None));
    assert_err("loglevel", "loglevel", "", "must not be empty");
    rejects("loglevel", "", "must not be empty");
    rejects(
        "loglevel",
        "warning",
        "expected TRACE, DEBUG, INFO, WARN, ERROR or NONE",
    );
    for l in [
        LogLevel::Trace,
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Warn,
        LogLevel::Error,
        LogLevel::None,
    ] {
        assert_eq!(LogLevel::parse(l.name()), Some(l));
    }
}

#[test]
fn ring_options() {
    assert_eq!(ok("").ring, Ring::Any);
    assert_eq!(ok("allkernel").ring, Ring::Kernel);
    assert_eq!(ok("alluser").ring, Ring::User);
    assert_eq!(ok("allkernel,alluser").ring, Ring::User);
}

// ---- derived values ----

#[test]
fn config_intervals_are_whole_milliseconds_or_zero() {
    let a = ok("cpu=10ms,wall=~50ms");
    assert_eq!((a.cpu_interval_ms(), a.wall_interval_ms()), (10, 50));
    let a = ok("cpu=100us,wall=1500us");
    assert_eq!((a.cpu_interval_ms(), a.wall_interval_ms()), (0, 1));
    let a = ok("wall");
    assert_eq!((a.cpu_interval_ms(), a.wall_interval_ms()), (0, 50));
    let a = ok("cpu");
    assert_eq!((a.cpu_interval_ms(), a.wall_interval_ms()), (10, 0));
    let a = ok("cpu=9223372036854775807");
    assert_eq!(a.cpu_interval_ms(), 9_223_372_036_854);
}

#[test]
fn mode_mask_combines_enabled_engines() {
    assert_eq!(
        ok("cpu,wall,memory,nativemem,natsock").mode_mask(),
        EM_CPU | EM_ALLOC | EM_WALL | EM_NATIVEMEM | EM_NATIVESOCKET
    );
    assert_eq!(ok("memory=1m:").mode_mask(), 0);
    assert_eq!(ok("memory=1m:L").mode_mask(), EM_ALLOC);
    assert_eq!(
        ok("memory=1m:a").mode_mask() & (EM_LOCK | EM_METHOD_TRACE),
        0
    );
}

#[test]
fn not_yet_sampled_lists_requested_options() {
    assert!(ok("cpu=1ms").not_yet_sampled().is_empty());
    assert!(ok("").not_yet_sampled().is_empty());
    assert_eq!(
        ok("cpu,wall,memory,generations=true,nativemem,natsock,jvmtistacks,lightweight=yes")
            .not_yet_sampled(),
        vec!["jvmtistacks", "lightweight"]
    );
    assert!(ok("event=alloc,cpu").not_yet_sampled().is_empty());
    // Honoured: the malloc and socket hooks.
    assert!(ok("nativemem=64k").not_yet_sampled().is_empty());
    assert!(ok("natsock=100us").not_yet_sampled().is_empty());
    assert!(ok("event=wall").not_yet_sampled().is_empty());
    // Honoured: the live-heap tracker.
    assert!(ok("generations=true").not_yet_sampled().is_empty());
    assert!(ok("memory=256k:a,generations=true")
        .not_yet_sampled()
        .is_empty());
}

#[test]
fn typical_datadog_command_parses() {
    let a = ok(
        "start,cpu=10ms,wall=~50ms,filter=0,memory=524288:L:0.5,cstack=vm,\
                attributes=tag1;tag2;tag3,loglevel=warn,file=/tmp/dd-%p.jfr",
    );
    assert_eq!(a.action, Action::Start);
    assert_eq!(a.cpu_interval_ns, Some(10_000_000));
    assert_eq!(a.wall_interval_ns, Some(50_000_000));
    assert!(a.wall_collapsing && a.filter);
    let m = a.memory.as_ref().unwrap();
    assert_eq!(
        (m.interval, m.allocations, m.liveness, m.heap_usage, m.ratio),
        (524_288, false, true, true, 0.5)
    );
    assert_eq!(a.cstack, CStack::Vm);
    assert_eq!(a.attributes.len(), 3);
    assert_eq!(a.loglevel, Some(LogLevel::Warn));
    assert_eq!(a.file.as_deref(), Some("/tmp/dd-4242.jfr"));
    assert_eq!(a.event, None);
    assert!(a.unknown.is_empty());
}

// ---- errors ----

#[test]
fn error_message_names_option_and_value() {
    let e = err("cpu=10xs");
    assert_eq!(
        e.to_string(),
        "Invalid value for option 'cpu': '10xs' (unknown time unit)"
    );
    let boxed: Box<dyn std::error::Error> = Box::new(e.clone());
    assert_eq!(boxed.to_string(), e.to_string());
    assert!(!e.is_state_error());
    // The option is reported lower-cased, the value as given.
    assert_err("CPU=10Xs", "cpu", "10Xs", "unknown time unit");
}

#[test]
fn first_error_is_reported() {
    assert_eq!(err("cpu=x,wall=y").option, "cpu");
}

#[test]
fn odd_inputs_never_panic() {
    let long_digits = "9".repeat(10_000);
    let inputs: Vec<String> = [
        "",
        ",",
        ",,,",
        "=",
        "==",
        "=x",
        "x=",
        "cpu=",
        "cpu==",
        "cpu=99999999999999999999s",
        "cpu=-9223372036854775808",
        "cpu=-9223372036854775809",
        "cpu=0x",
        "cpu=0xg",
        "cpu=~",
        "wall=~",
        "wall=~~",
        "wall=~-",
        "memory=::::",
        "memory=:",
        "memory=1:l:",
        "memory=1:l:1e400",
        "memory=1:l:-0",
        "memory=é:é:é",
        "cstack=é",
        "é=é",
        "ÉVENT=x",
        "\0",
        "cpu=\0",
        "file=%",
        "file=%{",
        "file=%{é}",
        "file=%é",
        "file=%{}}",
        "start,file=%t",
        "start,file=%{",
        "interval=0x8000000000000000",
        "safemode=-",
        "jfr=0x",
        "walltpt=+",
        "jstackdepth=-0",
        "attributes=;;;",
        "event=alloc,event=alloc",
        "loglevel=\u{1F600}",
        "fjmethodid=\u{1F600}",
        "start,resume,stop,check,status,list,version",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        format!("cpu={long_digits}"),
        format!("file=/{}", "%p%t%{HOME}%".repeat(1000)),
        ",".repeat(10_000),
    ])
    .collect();
    for input in &inputs {
        for now in [0, NOW, i64::MIN, i64::MAX] {
            let _ = parse(input, &test_env, u32::MAX, now);
            let _ = parse_unchecked(input, &no_env, 0, now);
        }
    }
    assert!(parse("start,file=%t", &no_env, 1, i64::MIN).is_ok());
}

// ---- the option table ----

#[test]
fn option_keys_are_lower_case_and_unique() {
    // Keys are looked up after lower-casing, so an upper-case key could never match, and a
    // duplicate would silently shadow the later row.
    let keys: Vec<&str> = options::keys().collect();
    for key in &keys {
        assert_eq!(*key, key.to_ascii_lowercase(), "{key}");
    }
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), keys.len());
}

#[test]
fn every_option_key_is_known() {
    // A bare key either parses without unknown keys or is rejected by its own handler (the
    // error names it); both prove the loop found it, in any case.
    for key in options::keys() {
        for written in [key.to_string(), key.to_ascii_uppercase()] {
            match parse_unchecked(&written, &no_env, PID, NOW) {
                Ok(a) => assert!(a.unknown.is_empty(), "{written}"),
                Err(e) => assert_eq!(e.option, key),
            }
        }
    }
}

#[test]
fn exporter_keys_are_known_and_change_nothing() {
    // The Java side validates and acts on them; here they must neither warn nor alter the rest.
    let plain = parse("start,cpu,file=/tmp/x.jfr", &no_env, PID, NOW).unwrap();
    let a = parse(
        "start,cpu,file=/tmp/x.jfr,otlp=http://127.0.0.1:4318/v1development/profiles,\
         otlpinterval=1s,otlpbacklog=4,otlpservice=shop,otlpattr=service.version=1.2",
        &no_env,
        PID,
        NOW,
    )
    .unwrap();
    assert!(a.unknown.is_empty(), "{:?}", a.unknown);
    assert_eq!(a, plain);
}
