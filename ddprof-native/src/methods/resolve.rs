//! jmethodID -> class, name, descriptor, modifiers and line table, through JVMTI, once
//! per distinct method (names carry over to the next dump: `kept_ids.rs`). A jmethodID whose class was unloaded no longer
//! resolves (JVMTI answers INVALID_METHODID) and becomes `<unloaded>`.

use std::sync::Arc;

use jni::sys::{jclass, JNIEnv};

use super::ahead_ids::{AheadParts, Taken};
use super::info::{
    internal_class_name, is_entry_point, MethodInfo, JVM_RECOGNIZED_METHOD_MODIFIERS,
};
use super::kept_ids::KeptIds;
use super::lazy::resolve::{LazyResolver, Refused, NO_ID_KEY, SCAN_CAP};
use super::raw::{MethodParts, RawRefusal};
use crate::counters::Counter;
use crate::footprint::{self, Category};
use crate::jvmti::{self, Jvmti};
use crate::sample::frame::{kind, Frame};
use crate::sample::safe_access::load_usize;
use crate::sample::tags;
use crate::sample::vm::{klass, layout, method};
use crate::word_map::WordMap;

/// Class references kept for `Resolver::class_names` are made room for this many at a time.
const KEEP_STEP: usize = 256;
/// References besides the kept ones that a dump holds at once (the lookup's own, `Thread`).
const KEEP_MARGIN: usize = 32;

/// `DDPROF_TEST_NAMING_CHECK=1`: see [`Resolver::check_parts`]. Read once.
fn check_against_jvmti() -> bool {
    static CHECK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CHECK.get_or_init(|| std::env::var("DDPROF_TEST_NAMING_CHECK").as_deref() == Ok("1"))
}

pub struct Resolver {
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    thread_class: jclass,
    cache: WordMap<u64, MethodInfo>,
    raw_cache: WordMap<u64, MethodInfo>,
    /// Tagged raw frames (lazy mode): the checks, and the classes they pinned.
    lazy: LazyResolver,
    /// Internal names of declaring classes by `Klass*`, each with a live reference of that
    /// class (a pin of `lazy`'s, or one of `kept_classes`): one GetClassSignature per class
    /// rather than one per method (a fifteenth of a first dump of the Kotlin compiler). A
    /// jmethodID's holder is read from VM memory unverified, so its entry counts only when
    /// JNI says the method's declaring class is that entry's class (IsSameObject): a stale
    /// or torn read costs the JVMTI call, never a wrong name.
    class_names: WordMap<usize, (jclass, Option<Arc<str>>)>,
    /// The local references of classes that `class_names` holds for jmethodID frames,
    /// deleted on drop (`lazy`'s pins are its own).
    kept_classes: Vec<jclass>,
    /// jmethodID names the previous dump left, and the stamp this dump's are made under.
    kept_ids: KeptIds,
    kept_ids_stamp: Option<u64>,
    /// Metadata of jmethodIDs the library watcher read ahead (`ahead_ids.rs`), under the same stamp.
    ahead: Taken,
    unknown: MethodInfo,
    unloaded: MethodInfo,
}

impl Resolver {
    pub fn new(jvmti: Jvmti, jni: *mut JNIEnv) -> Resolver {
        let thread_class = jvmti::find_class(jni, c"java/lang/Thread");
        // Before anything is named: a redefinition that begins after it unkeeps this
        // dump's names.
        let kept_ids_stamp = KeptIds::stamp();
        Resolver {
            jvmti,
            jni,
            thread_class,
            cache: WordMap::default(),
            raw_cache: WordMap::default(),
            lazy: LazyResolver::new(jni),
            class_names: WordMap::default(),
            kept_classes: Vec::new(),
            kept_ids: KeptIds::take(),
            kept_ids_stamp,
            ahead: Taken::take(kept_ids_stamp),
            unknown: MethodInfo::unknown(),
            unloaded: MethodInfo::unloaded(),
        }
    }

    pub fn resolve(&mut self, method_id: u64) -> &MethodInfo {
        let _mem = footprint::scope(Category::MethodMap);
        if !self.cache.contains_key(&method_id) {
            let kept = self.kept_ids.remove(method_id);
            let info = kept.or_else(|| self.lookup(method_id)).unwrap_or_else(|| {
                Counter::JmethodidSkipped.inc();
                MethodInfo::unloaded()
            });
            self.cache.insert(method_id, info);
        }
        &self.cache[&method_id]
    }

    /// The method-pool key of a frame in a trace whose earliest sample was taken at `since`,
    /// and whether its line numbers can be trusted: a tagged raw frame (lazy mode) that the
    /// checks of `lazy::resolve` accept becomes its jmethodID if it has one (so that it
    /// shares a pool entry with the frames sampled with that ID), else its checked
    /// `Method*` | `NO_ID_KEY` (no lines for a frame that may have run in an older version
    /// of a redefined method); every other frame keeps its own kind and value. The frame's
    /// marker bit decides, not the mode running now. The last field: whether a tagged frame's
    /// answer is the same in a trace of any `since` (its holder was never redefined), so that
    /// the dump may keep it by the frame's own words.
    pub fn key_of(&mut self, frame: &Frame, since: i64) -> (u8, u64, bool, bool) {
        let _mem = footprint::scope(Category::MethodMap);
        let u = tags::untag(frame);
        let Some(tag) = u.tag else {
            return (frame.kind, frame.method, true, true);
        };
        let Some(named) = self.lazy.method_id(u.method, tag, u.idnum, since) else {
            return (frame.kind, frame.method, true, false);
        };
        let a = named.accepted;
        if !self.cache.contains_key(&a.key) {
            // Named now, while the holder is known and pinned: the class part comes from
            // the pinned reference (once per class), the rest from the metadata the
            // checks read (JVMTI if those reads failed; the key is then a jmethodID that
            // something else made). A key without a jmethodID is always in the cache from
            // here on.
            let kept = self.lazy.take_kept(a.key).or_else(|| {
                // A key without the bit is a jmethodID, whose name an earlier dump may have
                // made whichever way (`kept_ids.rs`).
                (a.key & NO_ID_KEY == 0)
                    .then(|| self.kept_ids.remove(a.key))
                    .flatten()
            });
            let info = match kept {
                Some(info) => info,
                None => {
                    let parts = self.lazy.take_parts(a.key);
                    self.lookup_in_class(a.key as jni::sys::jmethodID, a.class, a.klass, parts)
                        .unwrap_or_else(|| {
                            Counter::JmethodidSkipped.inc();
                            MethodInfo::unloaded()
                        })
                }
            };
            self.cache.insert(a.key, info);
        }
        let any_since = a.redefined_at.is_none() && !a.in_flight;
        (kind::JAVA_METHOD_ID, a.key, named.lines, any_since)
    }

    /// Called once before the frames of a dump are keyed: sizes the caches for its
    /// distinct Java methods and warms the memory the lazy checks of its tagged frames read.
    /// Returns how many distinct Java methods (jmethodIDs and raw `Method*`s) the frames hold,
    /// and how many of them are tagged `Method*`s.
    pub fn prepare<'a>(&mut self, frames: impl Iterator<Item = &'a Frame>) -> (usize, usize) {
        let mut seen: WordMap<(bool, u64), ()> = WordMap::default();
        let mut tagged: Vec<usize> = Vec::new();
        for f in frames {
            if f.kind != kind::JAVA_METHOD_ID && f.kind != kind::RAW_METHOD {
                continue;
            }
            let u = tags::untag(f);
            let raw = f.kind == kind::RAW_METHOD;
            if seen.insert((raw, u.method), ()).is_none() && u.tag.is_some() {
                tagged.push(u.method as usize);
            }
        }
        self.cache.reserve(seen.len());
        self.lazy.warm(&tagged);
        (seen.len(), tagged.len())
    }

    /// Names a raw `Method*` frame that [`Self::key_of`] left raw (`since` as there): a tagged frame refused
    /// because its class is gone (unloaded, or its `Klass*` reused: a stale tag) is
    /// `<unloaded>`, as a jmethodID of an unloaded class is in every other mode; any other
    /// refusal is `unknown`. An untagged one (`fjmethodid=false`, classes that never unload;
    /// old methods of a redefined class, which lost their jmethodIDs to the new ones) is
    /// named from VM metadata unless its class was redefined or the method is not current
    /// ([`super::raw::resolve_checked`]). Cached apart from jmethodIDs (the key spaces could
    /// collide).
    pub fn resolve_raw(&mut self, frame: &Frame, since: i64) -> &MethodInfo {
        let _mem = footprint::scope(Category::MethodMap);
        let u = tags::untag(frame);
        if let Some(tag) = u.tag {
            return match self.lazy.refusal(u.method, tag, u.idnum, since) {
                Some(Refused::Unloaded | Refused::Stale) => &self.unloaded,
                _ => &self.unknown,
            };
        }
        let method = frame.method;
        if self.raw_cache.contains_key(&method) {
            Counter::RawFrameResolveCacheHits.inc();
        }
        self.raw_cache.entry(method).or_insert_with(|| {
            let encoding = crate::sample::walk::vm::VmWalker::get().map(|w| w.encoding());
            encoding
                .ok_or(RawRefusal::Unreadable)
                .and_then(|e| super::raw::resolve_checked(method as usize, e, SCAN_CAP))
                .unwrap_or_else(|r| {
                    Counter::RawFrameUnresolved.inc();
                    if r == RawRefusal::Redefined {
                        // The lazy mode's counter: a raw frame refused for the same reason.
                        Counter::MethodResolveLazyRedefined.inc();
                    }
                    MethodInfo::unknown()
                })
        })
    }

    fn lookup(&mut self, method_id: u64) -> Option<MethodInfo> {
        if method_id == 0 {
            return None;
        }
        let m = method_id as jni::sys::jmethodID;
        let (holder, mut ahead) = match self.ahead.remove(method_id) {
            Some(AheadParts {
                class: Some((class_name, entry_point)),
                parts,
                ..
            }) => return self.named_wholly_ahead(m, class_name, entry_point, parts),
            Some(a) => (Some(a.holder), Some(a.parts)),
            // The holder as the slot says now, unverified: each use below checks it.
            None => (
                layout::get()
                    .and_then(|l| l.method.as_ref())
                    .and_then(|g| method::holder(g, load_usize(m as usize)?)),
                None,
            ),
        };
        // A class this dump already holds a reference of (`class_names`): no JVMTI call. The
        // reference keeps the class loaded, and the parts are taken only for that class (read
        // ahead: its `Klass*` is the holder they were read with; read now: the checks of
        // `parts_from_metadata`). A jmethodID slot is never freed on the JDKs that hand out
        // slots (an unloaded class's are cleared, not reused), so reading it is safe.
        if let Some((class, Some(name))) = holder.and_then(|h| self.class_names.get(&h)) {
            let (class, name) = (*class, name.clone());
            if let Some(p) = self.parts_in(m, class, holder, &mut ahead) {
                return self.named_from_metadata(m, class, name, p);
            }
        }
        let class = self.jvmti.method_declaring_class(m).ok()?;
        // `kept`: `class` became the reference of a new `class_names` entry (not to be deleted).
        let (class_name, kept) = self.class_name(holder, class, false);
        let info =
            class_name.and_then(
                |class_name| match self.parts_in(m, class, holder, &mut ahead) {
                    Some(p) => self.named_from_metadata(m, class, class_name, p),
                    None => self.describe(m, class, class_name),
                },
            );
        if !kept {
            jvmti::delete_local_ref(self.jni, class);
        }
        info
    }

    /// The parts of `m` declared by `class` (a live reference): those read ahead (taken out of
    /// `ahead`) if `class` is the holder they were read with, else read now
    /// ([`Self::parts_from_metadata`]); None, and JVMTI answers, where neither can be vouched for.
    fn parts_in(
        &self,
        m: jni::sys::jmethodID,
        class: jclass,
        holder: Option<usize>,
        ahead: &mut Option<MethodParts>,
    ) -> Option<MethodParts> {
        if ahead.is_some() {
            let g = layout::get()?.method.as_ref()?;
            if holder.is_some() && klass::of_class_ref(g, class) == holder {
                return ahead.take();
            }
        }
        self.parts_from_metadata(m, class)
    }

    /// [`Self::lookup`] of a method whose holder's name was read ahead with its parts (JDK
    /// 17-24): no JVMTI call at all (the check mode compares it with JVMTI's answer).
    fn named_wholly_ahead(
        &mut self,
        m: jni::sys::jmethodID,
        class_name: Arc<str>,
        entry_point: bool,
        p: MethodParts,
    ) -> Option<MethodInfo> {
        Counter::JmethodidNamesFromMetadata.inc();
        Counter::JmethodidClassNamesTakenAhead.inc();
        if check_against_jvmti() {
            let class = self.jvmti.method_declaring_class(m).ok()?;
            let jvmti_name = internal_class_name_of(self.jvmti, class);
            if jvmti_name.as_deref() != Some(&*class_name)
                || entry_point
                    != is_entry_point(&p.name, &p.descriptor, || self.is_thread_class(class))
            {
                Counter::JmethodidMetadataMismatches.inc();
                crate::log::warn(&format!(
                    "naming check: class {jvmti_name:?}, read ahead {class_name} (entry point {entry_point})"
                ));
            }
            self.check_parts(m, class, class_name.clone(), &p);
            jvmti::delete_local_ref(self.jni, class);
        }
        Some(info_from_parts(class_name, p, entry_point))
    }

    /// Name, descriptor, modifiers and line table of the jmethodID `m` declared by `class` (a
    /// live reference: the class stays loaded while it is held), read from the method's
    /// metadata instead of asked of JVMTI. Each of the three JVMTI calls it replaces first
    /// checks `m` against a list as long as its class loader's jmethodIDs, thousands of
    /// entries when every method has one (the default `fjmethodid`): that check was the
    /// largest single cost of naming. None, and JVMTI answers, where the reads cannot be
    /// vouched for: IDs that are not slots holding the `Method*` (JDK 25 numbers them), the
    /// slot's method not held by `class`, the slot changed while read, or any redefinition
    /// running or begun since this dump started naming (only a redefinition makes a class's
    /// current method old, and only an old one is ever freed while its class is loaded).
    fn parts_from_metadata(&self, m: jni::sys::jmethodID, class: jclass) -> Option<MethodParts> {
        let stamp = self.kept_ids_stamp?;
        if jvmti::jvm::java_feature_version() >= 25 {
            return None;
        }
        let g = layout::get()?.method.as_ref()?;
        let encoding = crate::sample::walk::vm::VmWalker::get()?.encoding();
        let method = load_usize(m as usize)?;
        if method::holder(g, method)? != klass::of_class_ref(g, class)? {
            return None;
        }
        let mut parts = super::raw::method_parts(g, method, encoding)?;
        // What GetMethodModifiers answers: the class file's method flags.
        parts.modifiers &= JVM_RECOGNIZED_METHOD_MODIFIERS;
        let unchanged = load_usize(m as usize) == Some(method);
        (unchanged && jvmti::redefine::settled() == Some(stamp)).then_some(parts)
    }

    /// The jmethodID `m` of `class` named from the metadata read ([`Self::parts_from_metadata`]).
    fn named_from_metadata(
        &self,
        m: jni::sys::jmethodID,
        class: jclass,
        class_name: Arc<str>,
        p: MethodParts,
    ) -> Option<MethodInfo> {
        Counter::JmethodidNamesFromMetadata.inc();
        if check_against_jvmti() {
            self.check_parts(m, class, class_name.clone(), &p);
        }
        self.lookup_in_class_parts(class, class_name, p)
    }

    /// `DDPROF_TEST_NAMING_CHECK=1` (tests): every name read from metadata is compared with
    /// JVMTI's answer for the same jmethodID; a difference is counted and logged.
    fn check_parts(
        &self,
        m: jni::sys::jmethodID,
        class: jclass,
        class_name: Arc<str>,
        p: &MethodParts,
    ) {
        let Some(j) = self.describe(m, class, class_name) else {
            return;
        };
        // The class too: a method named in a class already held never asked JVMTI for it.
        let same_class = self.jvmti.method_declaring_class(m).is_ok_and(|declared| {
            let same = jvmti::is_same_object(self.jni, declared, class);
            jvmti::delete_local_ref(self.jni, declared);
            same
        });
        if !same_class
            || (&*j.name, &*j.descriptor, j.modifiers, &j.lines)
                != (&*p.name, &*p.descriptor, p.modifiers, &p.lines)
        {
            Counter::JmethodidMetadataMismatches.inc();
            crate::log::warn(&format!(
                "naming check: {}.{}{} modifiers {:#x} lines {:?}; metadata (same class: {}): {}{} {:#x} {:?}",
                j.class_name,
                j.name,
                j.descriptor,
                j.modifiers,
                j.lines,
                same_class,
                p.name,
                p.descriptor,
                p.modifiers,
                p.lines
            ));
        }
    }

    /// The internal name of `class` (a live reference) whose `Klass*` is believed to be
    /// `klass`: `class_names`' entry if JNI says it is the same class, else GetClassSignature.
    /// `pinned`: `class` lives as long as this resolver (a pin of `lazy`'s) and becomes the
    /// entry's reference; otherwise it is kept for a new entry only if there was none and
    /// JNI had room, and the second value says whether it was.
    fn class_name(
        &mut self,
        klass: Option<usize>,
        class: jclass,
        pinned: bool,
    ) -> (Option<Arc<str>>, bool) {
        if let Some((known, name)) = klass.and_then(|k| self.class_names.get(&k)) {
            if *known == class || jvmti::is_same_object(self.jni, class, *known) {
                return (name.clone(), false);
            }
        }
        let name = internal_class_name_of(self.jvmti, class);
        let Some(k) = klass else {
            return (name, false);
        };
        if pinned {
            self.class_names.insert(k, (class, name.clone()));
            return (name, false);
        }
        if !self.class_names.contains_key(&k) && self.room_to_keep() {
            self.kept_classes.push(class);
            self.class_names.insert(k, (class, name.clone()));
            return (name, true);
        }
        (name, false)
    }

    /// Room for one more kept class reference, asked of JNI [`KEEP_STEP`] at a time. Checked
    /// JNI (-Xcheck:jni) takes the number as the frame's total (and warns past it), so the
    /// total is asked for, with a margin for the references a lookup makes and deletes.
    fn room_to_keep(&mut self) -> bool {
        let kept = self.kept_classes.len();
        !kept.is_multiple_of(KEEP_STEP)
            || jvmti::ensure_local_capacity(self.jni, (kept + KEEP_STEP + KEEP_MARGIN) as i32)
    }

    /// [`Self::lookup`] for a method whose declaring class is known: `class` (a live
    /// reference) at `klass`; `parts` if its metadata was read already.
    fn lookup_in_class(
        &mut self,
        m: jni::sys::jmethodID,
        class: jclass,
        klass: usize,
        parts: Option<MethodParts>,
    ) -> Option<MethodInfo> {
        let class_name = self.class_name(Some(klass), class, true).0?;
        let Some(p) = parts else {
            if m as u64 & NO_ID_KEY != 0 {
                return None;
            }
            return self.describe(m, class, class_name);
        };
        self.lookup_in_class_parts(class, class_name, p)
    }

    /// The method of `class` (a live reference) named `class_name` whose metadata was read.
    fn lookup_in_class_parts(
        &self,
        class: jclass,
        class_name: Arc<str>,
        p: MethodParts,
    ) -> Option<MethodInfo> {
        let is_entry_point = is_entry_point(&p.name, &p.descriptor, || self.is_thread_class(class));
        Some(info_from_parts(class_name, p, is_entry_point))
    }

    /// Name, descriptor, modifiers and line table of `m`, declared by `class`.
    fn describe(
        &self,
        m: jni::sys::jmethodID,
        class: jclass,
        class_name: Arc<str>,
    ) -> Option<MethodInfo> {
        let (name, descriptor) = self.jvmti.method_name(m).ok()?;
        let modifiers = self.jvmti.method_modifiers(m).unwrap_or(0);
        let lines = {
            let _mem = footprint::scope(Category::LineTables);
            self.jvmti.line_number_table(m)
        };
        if !lines.is_empty() {
            Counter::LineNumberTables.inc();
        }
        let is_entry_point = is_entry_point(&name, &descriptor, || self.is_thread_class(class));
        Some(MethodInfo {
            class_name,
            name,
            descriptor,
            modifiers,
            lines,
            is_entry_point,
        })
    }

    fn is_thread_class(&self, class: jclass) -> bool {
        if self.thread_class.is_null() {
            return false;
        }
        // SAFETY: both are live local refs on this thread's env.
        unsafe {
            ((**self.jni).IsAssignableFrom.expect("JNI table"))(self.jni, class, self.thread_class)
                != 0
        }
    }
}

/// A method named from the parts its metadata holds.
fn info_from_parts(class_name: Arc<str>, p: MethodParts, is_entry_point: bool) -> MethodInfo {
    if !p.lines.is_empty() {
        Counter::LineNumberTables.inc();
    }
    MethodInfo {
        class_name,
        name: p.name,
        descriptor: p.descriptor,
        modifiers: p.modifiers,
        lines: p.lines,
        is_entry_point,
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        // The names the next dump may reuse: raw keys the lazy checks can vouch for again
        // (`lazy/kept.rs`), jmethodIDs (`kept_ids.rs`); the rest are dropped here.
        {
            let _mem = footprint::scope(Category::MethodMap);
            let mut named = std::mem::take(&mut self.cache);
            let lazy = &self.lazy;
            let lazy_part: WordMap<u64, MethodInfo> = named
                .extract_if(|key, _| key & NO_ID_KEY != 0 || lazy.is_keepable(*key))
                .collect();
            self.lazy.keep(lazy_part);
            KeptIds::leave(named, self.kept_ids_stamp);
        }
        // `lazy` pops its local frame when dropped, after this; `thread_class` and kept
        // classes made before that frame belong to the frame below it, where deleting them
        // is allowed.
        for class in self.kept_classes.drain(..) {
            jvmti::delete_local_ref(self.jni, class);
        }
        jvmti::delete_local_ref(self.jni, self.thread_class);
    }
}

fn internal_class_name_of(jvmti: Jvmti, class: jclass) -> Option<Arc<str>> {
    jvmti
        .class_signature(class)
        .ok()
        .map(|s| internal_class_name(&s).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_signatures_become_internal_names() {
        assert_eq!(
            internal_class_name("Ljava/lang/String;"),
            "java/lang/String"
        );
        assert_eq!(internal_class_name("[I"), "[I");
        assert_eq!(
            internal_class_name("[Ljava/lang/Integer;"),
            "[Ljava/lang/Integer;"
        );
    }

    #[test]
    fn line_of_picks_the_entry_covering_the_bci() {
        let m = MethodInfo {
            lines: vec![(0, 10), (5, 11), (9, 14)],
            ..MethodInfo::unloaded()
        };
        assert_eq!(m.line_of(0), 10);
        assert_eq!(m.line_of(4), 10);
        assert_eq!(m.line_of(5), 11);
        assert_eq!(m.line_of(100), 14);
        assert_eq!(MethodInfo::unloaded().line_of(3), 0);
    }
}
