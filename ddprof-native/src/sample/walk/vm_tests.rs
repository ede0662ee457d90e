use super::*;

#[test]
fn method_cache_is_direct_mapped_and_per_walk() {
    let mut c = MethodCache::default();
    assert!(c.get(0).is_none(), "a null Method* never hits");
    let methods: Vec<usize> = (1..=200).map(|i| 0x7f00_0000_0000 + i * 88).collect();
    for &m in &methods {
        c.put(CachedMethod {
            method: m,
            kind: MethodKind::Id(m + 1),
        });
        assert!(matches!(c.get(m).map(|e| e.kind), Some(MethodKind::Id(id)) if id == m + 1));
    }
    // Later entries evict earlier ones in the same slot; whatever hits is right.
    let hits = methods
        .iter()
        .filter(|&&m| match c.get(m).map(|e| e.kind) {
            Some(MethodKind::Id(id)) => {
                assert_eq!(id, m + 1);
                true
            }
            Some(_) => panic!("wrong kind"),
            None => false,
        })
        .count();
    assert!(hits > 0 && hits <= 32, "{hits}");
    // Each walk starts empty.
    assert!(methods
        .iter()
        .all(|&m| MethodCache::default().get(m).is_none()));
}
