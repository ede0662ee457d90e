//! Test-only JFR decoder. It reads everything through the metadata the chunk
//! declares, like the JDK reader does, and insists that every event and pool
//! entry consumes exactly its declared bytes, which catches any writer whose
//! field order drifts from the metadata table.

use super::metadata::{
    T_BOOLEAN, T_BYTE, T_CHAR, T_DOUBLE, T_FLOAT, T_INT, T_LONG, T_SHORT, T_STRING,
};
use std::collections::HashMap;

pub struct Reader<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn u8(&mut self) -> u8 {
        let b = self.buf[self.pos];
        self.pos += 1;
        b
    }

    fn raw<const N: usize>(&mut self) -> [u8; N] {
        let b: [u8; N] = self.buf[self.pos..self.pos + N].try_into().unwrap();
        self.pos += N;
        b
    }

    pub fn be_u16(&mut self) -> u16 {
        u16::from_be_bytes(self.raw())
    }

    pub fn be_u32(&mut self) -> u32 {
        u32::from_be_bytes(self.raw())
    }

    pub fn be_i64(&mut self) -> i64 {
        i64::from_be_bytes(self.raw())
    }

    /// Same algorithm as the JDK's RecordingInput.readLong.
    pub fn varint(&mut self) -> u64 {
        let mut v = 0u64;
        for i in 0..8 {
            let b = self.u8();
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return v;
            }
        }
        v | u64::from(self.u8()) << 56
    }

    pub fn string(&mut self) -> Option<String> {
        match self.u8() {
            0 => None,
            1 => Some(String::new()),
            3 => {
                let len = self.varint() as usize;
                let s = std::str::from_utf8(&self.buf[self.pos..self.pos + len])
                    .expect("valid UTF-8")
                    .to_owned();
                self.pos += len;
                Some(s)
            }
            e => panic!("unexpected string encoding {e} at {}", self.pos - 1),
        }
    }
}

#[derive(Debug, Clone)]
pub struct FieldInfo {
    pub name: String,
    pub class: i64,
    pub cpool: bool,
    pub array: bool,
    /// (annotation class id, value)
    pub annotations: Vec<(i64, Option<String>)>,
}

#[derive(Debug, Clone)]
pub struct ClassInfo {
    pub id: i64,
    pub name: String,
    pub super_type: Option<String>,
    pub simple: bool,
    pub fields: Vec<FieldInfo>,
}

struct Element {
    name: String,
    attrs: HashMap<String, String>,
    children: Vec<Element>,
}

fn read_element(r: &mut Reader, strings: &[String]) -> Element {
    let s = |i: u64| strings[i as usize].clone();
    let name = s(r.varint());
    let attrs = (0..r.varint())
        .map(|_| (s(r.varint()), s(r.varint())))
        .collect();
    let children = (0..r.varint()).map(|_| read_element(r, strings)).collect();
    Element {
        name,
        attrs,
        children,
    }
}

pub struct Metadata {
    pub start_ticks: i64,
    pub classes: Vec<ClassInfo>,
    pub region: HashMap<String, String>,
}

impl Metadata {
    /// Parses a metadata event starting at its size field.
    pub fn parse(event: &[u8]) -> Self {
        let mut r = Reader::new(event);
        let size = r.varint() as usize;
        assert_eq!(r.varint(), 0, "metadata type id");
        let start_ticks = r.varint() as i64;
        assert_eq!(r.varint(), 0, "metadata duration");
        assert_eq!(r.varint(), 1, "metadata id");
        let strings: Vec<String> = (0..r.varint())
            .map(|_| r.string().expect("non-null"))
            .collect();
        let root = read_element(&mut r, &strings);
        assert_eq!(r.pos, size, "metadata size");
        assert_eq!(root.name, "root");
        let metadata = root
            .children
            .iter()
            .find(|e| e.name == "metadata")
            .expect("metadata element");
        let region = root
            .children
            .iter()
            .find(|e| e.name == "region")
            .expect("region element");
        let classes = metadata
            .children
            .iter()
            .map(|c| {
                assert_eq!(c.name, "class");
                ClassInfo {
                    id: c.attrs["id"].parse().unwrap(),
                    name: c.attrs["name"].clone(),
                    super_type: c.attrs.get("superType").cloned(),
                    simple: c.attrs.get("simpleType").is_some_and(|v| v == "true"),
                    fields: c
                        .children
                        .iter()
                        .filter(|f| f.name == "field")
                        .map(|f| FieldInfo {
                            name: f.attrs["name"].clone(),
                            class: f.attrs["class"].parse().unwrap(),
                            cpool: f.attrs.get("constantPool").is_some_and(|v| v == "true"),
                            array: f.attrs.get("dimension").is_some_and(|v| v == "1"),
                            annotations: f
                                .children
                                .iter()
                                .map(|a| {
                                    (
                                        a.attrs["class"].parse().unwrap(),
                                        a.attrs.get("value").cloned(),
                                    )
                                })
                                .collect(),
                        })
                        .collect(),
                }
            })
            .collect();
        Metadata {
            start_ticks,
            classes,
            region: region.attrs.clone(),
        }
    }

    pub fn class(&self, name: &str) -> &ClassInfo {
        self.classes
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("class {name}"))
    }

    pub fn by_id(&self, id: i64) -> &ClassInfo {
        self.classes
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("class id {id}"))
    }

    fn value(&self, r: &mut Reader, class: i64) -> Value {
        match class {
            T_BOOLEAN => Value::Bool(match r.u8() {
                0 => false,
                1 => true,
                b => panic!("bad boolean {b}"),
            }),
            T_BYTE => Value::Long(i64::from(r.u8() as i8)),
            T_CHAR | T_SHORT | T_LONG => Value::Long(r.varint() as i64),
            T_INT => Value::Long(i64::from(r.varint() as i32)),
            T_FLOAT => Value::Float(f32::from_be_bytes(r.raw())),
            T_DOUBLE => Value::Float(f64::from_be_bytes(r.raw()) as f32),
            T_STRING => Value::Str(r.string()),
            _ => Value::Struct(
                self.by_id(class)
                    .fields
                    .iter()
                    .map(|f| self.field(r, f))
                    .collect(),
            ),
        }
    }

    fn field(&self, r: &mut Reader, f: &FieldInfo) -> Value {
        let one = |r: &mut Reader| {
            if f.cpool {
                Value::Ref(r.varint())
            } else {
                self.value(r, f.class)
            }
        };
        if f.array {
            Value::Array((0..r.varint()).map(|_| one(r)).collect())
        } else {
            one(r)
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Long(i64),
    Bool(bool),
    Float(f32),
    Str(Option<String>),
    Ref(u64),
    Struct(Vec<Value>),
    Array(Vec<Value>),
}

impl Value {
    pub fn long(&self) -> i64 {
        match self {
            Value::Long(v) => *v,
            v => panic!("not a long: {v:?}"),
        }
    }
    pub fn reference(&self) -> u64 {
        match self {
            Value::Ref(v) => *v,
            v => panic!("not a reference: {v:?}"),
        }
    }
    pub fn str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => s.as_deref(),
            // Single-string structs (Symbol, CounterName...) read as strings.
            Value::Struct(f) if f.len() == 1 => f[0].str(),
            v => panic!("not a string: {v:?}"),
        }
    }
    pub fn bool(&self) -> bool {
        match self {
            Value::Bool(b) => *b,
            v => panic!("not a boolean: {v:?}"),
        }
    }
    pub fn float(&self) -> f32 {
        match self {
            Value::Float(f) => *f,
            v => panic!("not a float: {v:?}"),
        }
    }
    pub fn fields(&self) -> &[Value] {
        match self {
            Value::Struct(f) | Value::Array(f) => f,
            v => panic!("not a struct: {v:?}"),
        }
    }
}

pub struct Event {
    pub type_id: i64,
    pub name: String,
    pub offset: usize,
    pub fields: Vec<(String, Value)>,
}

impl Event {
    pub fn get(&self, name: &str) -> &Value {
        &self
            .fields
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{}.{name}", self.name))
            .1
    }
}

pub struct Chunk {
    pub major: u16,
    pub minor: u16,
    pub size: i64,
    pub cpool_offset: i64,
    pub metadata_offset: i64,
    pub start_nanos: i64,
    pub duration_nanos: i64,
    pub start_ticks: i64,
    pub ticks_per_second: i64,
    pub features: u32,
    pub metadata: Metadata,
    pub events: Vec<Event>,
    /// Pools in file order: (type id, entries by key).
    pub pools: Vec<(i64, HashMap<u64, Value>)>,
    pub checkpoint_ticks: i64,
}

impl Chunk {
    pub fn parse(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        assert_eq!(&r.raw::<4>(), b"FLR\0", "magic");
        let major = r.be_u16();
        let minor = r.be_u16();
        let size = r.be_i64();
        let cpool_offset = r.be_i64();
        let metadata_offset = r.be_i64();
        let start_nanos = r.be_i64();
        let duration_nanos = r.be_i64();
        let start_ticks = r.be_i64();
        let ticks_per_second = r.be_i64();
        let features = r.be_u32();
        assert_eq!(r.pos, 68);
        assert_eq!(size as usize, bytes.len(), "chunk size");

        let mut metadata = None;
        let mut events = Vec::new();
        let mut pools = Vec::new();
        let mut checkpoint_ticks = 0;
        let mut checkpoints = 0;
        while r.pos < bytes.len() {
            let offset = r.pos;
            let event_size = r.varint() as usize;
            assert!(
                event_size > 0 && offset + event_size <= bytes.len(),
                "event size at {offset}"
            );
            let type_id = r.varint() as i64;
            match type_id {
                0 => {
                    assert_eq!(offset as i64, metadata_offset, "metadata offset");
                    metadata = Some(Metadata::parse(&bytes[offset..offset + event_size]));
                    r.pos = offset + event_size;
                }
                1 => {
                    assert_eq!(offset as i64, cpool_offset, "checkpoint offset");
                    checkpoints += 1;
                    let md = metadata.as_ref().expect("metadata before checkpoint");
                    checkpoint_ticks = r.varint() as i64;
                    assert_eq!(r.varint(), 0, "checkpoint duration");
                    assert_eq!(r.varint(), 0, "checkpoint delta");
                    assert_eq!(r.u8(), 1, "checkpoint flush flag");
                    let count = r.varint();
                    for _ in 0..count {
                        let type_id = r.varint() as i64;
                        let entries = r.varint();
                        assert!(entries > 0, "empty pool {type_id}");
                        let mut map = HashMap::new();
                        for _ in 0..entries {
                            let key = r.varint();
                            let v = md.value(&mut r, type_id);
                            assert!(
                                map.insert(key, v).is_none(),
                                "duplicate key {key} in pool {type_id}"
                            );
                        }
                        pools.push((type_id, map));
                    }
                }
                _ => {
                    let md = metadata.as_ref().expect("metadata before events");
                    let class = md.by_id(type_id);
                    assert_eq!(
                        class.super_type.as_deref(),
                        Some("jdk.jfr.Event"),
                        "{}",
                        class.name
                    );
                    let fields = class
                        .fields
                        .iter()
                        .map(|f| (f.name.clone(), md.field(&mut r, f)))
                        .collect();
                    events.push(Event {
                        type_id,
                        name: class.name.clone(),
                        offset,
                        fields,
                    });
                }
            }
            assert_eq!(
                r.pos,
                offset + event_size,
                "event at {offset} (type {type_id}) size mismatch"
            );
            // The writer promises the minimal framing: 1 byte below 128, else 5.
            let size_len = if bytes[offset] & 0x80 == 0 { 1 } else { 5 };
            assert_eq!(size_len == 1, event_size < 128, "size framing at {offset}");
        }
        assert_eq!(checkpoints, 1);
        Chunk {
            major,
            minor,
            size,
            cpool_offset,
            metadata_offset,
            start_nanos,
            duration_nanos,
            start_ticks,
            ticks_per_second,
            features,
            metadata: metadata.expect("metadata"),
            events,
            pools,
            checkpoint_ticks,
        }
    }

    pub fn pool(&self, type_id: i64) -> &HashMap<u64, Value> {
        &self
            .pools
            .iter()
            .find(|(t, _)| *t == type_id)
            .unwrap_or_else(|| panic!("pool {type_id}"))
            .1
    }

    pub fn has_pool(&self, type_id: i64) -> bool {
        self.pools.iter().any(|(t, _)| *t == type_id)
    }

    pub fn events_named<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s Event> + 's {
        self.events.iter().filter(move |e| e.name == name)
    }

    fn symbol(&self, key: u64) -> String {
        self.pool(super::metadata::T_SYMBOL)[&key]
            .str()
            .unwrap()
            .to_owned()
    }

    /// `class.method(descriptor)` of a Method pool entry, classes dotted.
    pub fn method_name(&self, key: u64) -> String {
        use super::metadata::{T_CLASS, T_METHOD};
        let m = self.pool(T_METHOD)[&key].fields();
        let class = self.pool(T_CLASS)[&m[0].reference()].fields();
        format!(
            "{}.{}{}",
            self.symbol(class[1].reference()).replace('/', "."),
            self.symbol(m[1].reference()),
            self.symbol(m[2].reference())
        )
    }

    /// Frames of a StackTrace pool entry as "method line bci type".
    pub fn frames(&self, key: u64) -> (bool, Vec<String>) {
        use super::metadata::{T_FRAME_TYPE, T_STACK_TRACE};
        let t = self.pool(T_STACK_TRACE)[&key].fields();
        let frames = t[1]
            .fields()
            .iter()
            .map(|f| {
                let f = f.fields();
                let ty = self.pool(T_FRAME_TYPE)[&f[3].reference()]
                    .str()
                    .unwrap()
                    .to_owned();
                format!(
                    "{} {} {} {}",
                    self.method_name(f[0].reference()),
                    f[1].long(),
                    f[2].long(),
                    ty
                )
            })
            .collect();
        (t[0].bool(), frames)
    }
}
