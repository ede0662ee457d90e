use super::*;

fn sample() -> ProcessContext {
    ProcessContext::for_tracer(
        "prod".into(),
        "host-1".into(),
        "rt-1".into(),
        "svc".into(),
        "1.2".into(),
        "3.4".into(),
        vec!["http.route".into()],
    )
}

/// A KeyValue with a string value, spelled out byte by byte.
fn kv(field: u8, key: &str, value: &str) -> Vec<u8> {
    let any = [&[0x0a, value.len() as u8][..], value.as_bytes()].concat();
    let body = [
        &[0x0a, key.len() as u8][..],
        key.as_bytes(),
        &[0x12, any.len() as u8],
        &any,
    ]
    .concat();
    [&[(field << 3) | 2, body.len() as u8][..], &body].concat()
}

#[test]
fn encodes_the_upstream_wire_layout() {
    let ctx = ProcessContext {
        deployment_environment_name: "e".into(),
        host_name: "h".into(),
        service_instance_id: "i".into(),
        service_name: "s".into(),
        service_version: "v".into(),
        telemetry_sdk_language: "java".into(),
        telemetry_sdk_version: "t".into(),
        telemetry_sdk_name: "dd-trace-java".into(),
        resource_attributes: vec![],
        schema_version: Some("tlsdesc_v1_dev".into()),
        attribute_key_map: Some(vec!["a".into(), "bc".into()]),
    };
    let resource = [
        kv(1, "deployment.environment.name", "e"),
        kv(1, "service.instance.id", "i"),
        kv(1, "service.name", "s"),
        kv(1, "service.version", "v"),
        kv(1, "telemetry.sdk.language", "java"),
        kv(1, "telemetry.sdk.version", "t"),
        kv(1, "telemetry.sdk.name", "dd-trace-java"),
        kv(1, "host.name", "h"),
    ]
    .concat();
    // AnyValue{array_value: ArrayValue{values: [AnyValue{"a"}, AnyValue{"bc"}]}}
    let array = [0x0a, 3, 0x0a, 1, b'a', 0x0a, 4, 0x0a, 2, b'b', b'c'];
    let any = [&[0x2a, array.len() as u8][..], &array].concat();
    let key = b"threadlocal.attribute_key_map";
    let map_body = [
        &[0x0a, key.len() as u8][..],
        key,
        &[0x12, any.len() as u8],
        &any,
    ]
    .concat();
    let mut expected = vec![0x0a];
    put_varint(&mut expected, resource.len());
    expected.extend_from_slice(&resource);
    expected.extend(kv(2, "threadlocal.schema_version", "tlsdesc_v1_dev"));
    expected.extend([0x12, map_body.len() as u8]);
    expected.extend(map_body);
    assert_eq!(encode(&ctx).unwrap(), expected);
}

#[test]
fn round_trips_including_unusual_values() {
    let mut ctx = sample();
    assert_eq!(decode(&encode(&ctx).unwrap()).unwrap(), ctx);

    ctx.deployment_environment_name = String::new();
    ctx.host_name = "hôte-\u{1F600}-日本".into();
    ctx.service_name = "x".repeat(KEY_VALUE_LIMIT); // a 2-byte varint, and the limit itself
    ctx.service_version = "\0nul inside".into();
    ctx.resource_attributes = vec![("k".into(), "".into())];
    let bytes = encode(&ctx).unwrap();
    assert_eq!(decode(&bytes).unwrap(), ctx);
}

#[test]
fn for_tracer_reserves_slot_zero_and_clips_keys() {
    let keys: Vec<String> = (0..15).map(|i| format!("k{i}")).collect();
    let ctx = ProcessContext::for_tracer(
        "".into(),
        "".into(),
        "".into(),
        "".into(),
        "".into(),
        "".into(),
        keys,
    );
    let map = ctx.attribute_key_map.clone().unwrap();
    assert_eq!(map.len(), MAX_ATTRIBUTE_KEYS + 1);
    assert_eq!(map[0], LOCAL_ROOT_SPAN_ID_KEY);
    assert_eq!(map[10], "k9");
    assert_eq!(ctx.telemetry_sdk_language, "java");
    assert_eq!(ctx.telemetry_sdk_name, "dd-trace-java");
    assert_eq!(decode(&encode(&ctx).unwrap()).unwrap(), ctx);
}

#[test]
fn refuses_what_upstream_refuses() {
    let mut ctx = sample();
    ctx.service_name = "x".repeat(KEY_VALUE_LIMIT + 1);
    assert!(encode(&ctx).is_err(), "a value over 4096 bytes");

    let mut ctx = sample();
    for f in [
        &mut ctx.deployment_environment_name,
        &mut ctx.service_instance_id,
        &mut ctx.service_name,
        &mut ctx.service_version,
    ] {
        *f = "y".repeat(KEY_VALUE_LIMIT);
    }
    assert!(encode(&ctx).is_err(), "a resource message over 16383 bytes");

    let mut ctx = sample();
    ctx.schema_version = None;
    assert!(encode(&ctx).is_err(), "a key map without a schema version");
}

#[test]
fn decode_rejects_broken_payloads() {
    let bytes = encode(&sample()).unwrap();
    for cut in [1, 2, 10, bytes.len() / 2, bytes.len() - 1] {
        assert!(decode(&bytes[..cut]).is_none(), "cut at {cut}");
    }
    assert!(decode(&[0xff; 16]).is_none());
    // A missing named field.
    let partial = [0x0a, 0].to_vec();
    assert!(decode(&partial).is_none());
    // A duplicated named field.
    let mut dup = sample();
    dup.resource_attributes = vec![("service.name".into(), "again".into())];
    assert!(decode(&encode(&dup).unwrap()).is_none());
    // A second attribute key map.
    let mut twice = encode(&sample()).unwrap();
    put_key_value_array(&mut twice, 2, KEY_MAP_KEY, &["a".to_string()]);
    assert!(decode(&twice).is_none());
}

#[test]
fn decode_skips_unknown_fields() {
    let mut bytes = encode(&sample()).unwrap();
    bytes.extend([0x18, 0x96, 0x01]); // field 3, varint 150
    bytes.extend([0x21, 1, 2, 3, 4, 5, 6, 7, 8]); // field 4, fixed64
    assert_eq!(decode(&bytes).unwrap(), sample());
}

fn maps_line(addr: usize) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .find(|l| {
            let start = l.split('-').next().unwrap();
            usize::from_str_radix(start, 16).ok() == Some(addr)
        })
        .map(str::to_string)
}

/// One test for everything that goes through the process-wide mapping.
#[test]
fn publishes_updates_and_drops_the_mapping() {
    assert!(read().is_none() || mapping_address().is_some());
    let first = sample();
    publish(&first).unwrap();
    let addr = mapping_address().unwrap();
    let line = maps_line(addr).expect("the mapping is in /proc/self/maps");
    assert!(line.contains("OTEL_CTX"), "{line}");
    let perms = line.split_whitespace().nth(1).unwrap();
    assert!(perms.starts_with("rw") && !perms.contains('x'), "{line}");
    assert_eq!(read().unwrap(), first);

    // SAFETY: our live mapping; the test is the only writer.
    let header = unsafe { &*(addr as *const Header) };
    assert_eq!(header.signature, SIGNATURE);
    assert_eq!(header.version.load(Ordering::Relaxed), VERSION);
    let t1 = header.published_at_ns.load(Ordering::Relaxed);
    assert_ne!(t1, 0);

    let mut second = sample();
    second.service_name = "svc-2".into();
    publish(&second).unwrap();
    assert_eq!(mapping_address(), Some(addr), "updated in place");
    assert!(header.published_at_ns.load(Ordering::Relaxed) > t1);
    assert_eq!(read().unwrap(), second);

    let mut bad = sample();
    bad.host_name = "z".repeat(KEY_VALUE_LIMIT + 1);
    assert!(publish(&bad).is_err());
    assert_eq!(
        read().unwrap(),
        second,
        "a refused publish keeps the previous context"
    );

    drop_current();
    assert!(read().is_none());
    assert!(maps_line(addr).is_none_or(|l| !l.contains("OTEL_CTX")));
    publish(&first).unwrap();
    assert_eq!(read().unwrap(), first);
    drop_current();
}
