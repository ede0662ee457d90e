//! Class and method name normalisation applied when methods enter the pool.
//!
//! Reflection accessors and lambda forms are generated per call site, so the
//! raw names (`GeneratedMethodAccessor1234`, `LambdaForm$MH/0x...`) would split
//! one logical frame into thousands of distinct ones. Upstream folds them into
//! stable names, and backends aggregate on those names, so we do the same.

use std::borrow::Cow;

/// Reflection accessor families: (class prefix, which is also the normalised
/// class name, and the fixed method name readers expect).
const ACCESSORS: [(&str, &str); 4] = [
    (
        "jdk/internal/reflect/GeneratedConstructorAccessor",
        "Object jdk.internal.reflect.GeneratedConstructorAccessor.newInstance(Object[])",
    ),
    (
        "sun/reflect/GeneratedConstructorAccessor",
        "Object sun.reflect.GeneratedConstructorAccessor.newInstance(Object[])",
    ),
    (
        "jdk/internal/reflect/GeneratedMethodAccessor",
        "Object jdk.internal.reflect.GeneratedMethodAccessor.invoke(Object, Object[])",
    ),
    (
        "sun/reflect/GeneratedMethodAccessor",
        "Object sun.reflect.GeneratedMethodAccessor.invoke(Object, Object[])",
    ),
];

const LAMBDA_FORM: &str = "java/lang/invoke/LambdaForm$";
const LAMBDA_FORM_KINDS: [&str; 3] = ["MH", "BMH", "DMH"];

/// Normalises `(class, method, descriptor)` as upstream does at dump time;
/// names that need no change are returned unchanged. Idempotent.
pub fn normalize(
    class_name: &str,
    method_name: &str,
    descriptor: &str,
) -> (String, String, String) {
    let (c, m) = normalize_cow(class_name, method_name);
    (c.into_owned(), m.into_owned(), descriptor.to_owned())
}

/// Allocation-free variant for the common case where nothing changes.
pub(crate) fn normalize_cow<'a>(
    class_name: &'a str,
    method_name: &'a str,
) -> (Cow<'a, str>, Cow<'a, str>) {
    // Prefix matching (not "prefix + digits") follows upstream, and is what
    // keeps the function idempotent: the normalised class matches again.
    for (prefix, method) in ACCESSORS {
        if class_name.starts_with(prefix) {
            return (Cow::Borrowed(prefix), Cow::Borrowed(method));
        }
    }
    if let Some(rest) = class_name.strip_prefix(LAMBDA_FORM) {
        for kind in LAMBDA_FORM_KINDS {
            if rest.starts_with(kind) {
                let class = &class_name[..LAMBDA_FORM.len() + kind.len()];
                return (Cow::Borrowed(class), Cow::Borrowed(method_name));
            }
        }
    }
    (Cow::Borrowed(class_name), Cow::Borrowed(method_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(c: &str, m: &str) -> (String, String, String) {
        normalize(
            c,
            m,
            "(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;",
        )
    }

    #[test]
    fn method_accessors() {
        let (c, m, d) = n("jdk/internal/reflect/GeneratedMethodAccessor123", "invoke");
        assert_eq!(c, "jdk/internal/reflect/GeneratedMethodAccessor");
        assert_eq!(
            m,
            "Object jdk.internal.reflect.GeneratedMethodAccessor.invoke(Object, Object[])"
        );
        assert_eq!(
            d,
            "(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;"
        );

        let (c, m, _) = n("sun/reflect/GeneratedMethodAccessor7", "invoke");
        assert_eq!(c, "sun/reflect/GeneratedMethodAccessor");
        assert_eq!(
            m,
            "Object sun.reflect.GeneratedMethodAccessor.invoke(Object, Object[])"
        );
    }

    #[test]
    fn constructor_accessors() {
        let (c, m, _) = n(
            "jdk/internal/reflect/GeneratedConstructorAccessor42",
            "newInstance",
        );
        assert_eq!(c, "jdk/internal/reflect/GeneratedConstructorAccessor");
        assert_eq!(
            m,
            "Object jdk.internal.reflect.GeneratedConstructorAccessor.newInstance(Object[])"
        );

        let (c, m, _) = n("sun/reflect/GeneratedConstructorAccessor1", "newInstance");
        assert_eq!(c, "sun/reflect/GeneratedConstructorAccessor");
        assert_eq!(
            m,
            "Object sun.reflect.GeneratedConstructorAccessor.newInstance(Object[])"
        );
    }

    #[test]
    fn lambda_forms_keep_the_method() {
        let cases = [
            (
                "java/lang/invoke/LambdaForm$MH/0x0000000800c0d000",
                "java/lang/invoke/LambdaForm$MH",
            ),
            (
                "java/lang/invoke/LambdaForm$DMH/0x0000000801001800",
                "java/lang/invoke/LambdaForm$DMH",
            ),
            (
                "java/lang/invoke/LambdaForm$BMH/1234",
                "java/lang/invoke/LambdaForm$BMH",
            ),
            (
                "java/lang/invoke/LambdaForm$MH",
                "java/lang/invoke/LambdaForm$MH",
            ),
        ];
        for (raw, want) in cases {
            let (c, m, d) = normalize(raw, "invoke", "(Ljava/lang/Object;)V");
            assert_eq!(c, want, "{raw}");
            assert_eq!(m, "invoke");
            assert_eq!(d, "(Ljava/lang/Object;)V");
        }
        // Other LambdaForm classes (e.g. the Holder) are not folded.
        let (c, _, _) = n("java/lang/invoke/LambdaForm$Holder", "invokeExact_MT");
        assert_eq!(c, "java/lang/invoke/LambdaForm$Holder");
    }

    #[test]
    fn ordinary_names_are_untouched() {
        for c in [
            "java/lang/String",
            "com/example/Foo$$Lambda/0x0000000800c0a000",
            "",
            "[I",
        ] {
            let (c2, m2, d2) = normalize(c, "run", "()V");
            assert_eq!((c2.as_str(), m2.as_str(), d2.as_str()), (c, "run", "()V"));
        }
        assert!(matches!(
            normalize_cow("java/lang/String", "x").0,
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn idempotent() {
        for c in [
            "jdk/internal/reflect/GeneratedMethodAccessor9",
            "sun/reflect/GeneratedConstructorAccessor3",
            "java/lang/invoke/LambdaForm$DMH/0x1",
            "a/B",
        ] {
            let once = normalize(c, "m", "()V");
            let twice = normalize(&once.0, &once.1, &once.2);
            assert_eq!(once, twice);
        }
    }
}
