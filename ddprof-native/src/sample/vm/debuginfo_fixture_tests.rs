use std::collections::HashMap;

/// One recorded JDK: see `fixtures/debuginfo/README.md` for the format.
pub struct Recording {
    pub name: &'static str,
    pub feature_version: u32,
    pub invocation_entry_bci: i32,
    pub pc_desc_size: usize,
    pub pc_offset_field: usize,
    pub scope_field: usize,
    pub code_size: usize,
    pub pcs: Region,
    pub scopes: Region,
    pub metadata: Vec<(usize, String)>,
    pub metadata_addr: usize,
    pub truth: Vec<PcTruth>,
    pub line_tables: Vec<LineTableTruth>,
}

pub struct Region {
    pub addr: usize,
    pub bytes: Vec<u8>,
}

pub struct PcTruth {
    pub pc_offset: usize,
    /// (Method*, bci, JVMTI name), innermost first.
    pub frames: Vec<(usize, i32, String)>,
}

pub struct LineTableTruth {
    pub method: String,
    pub code_size: i32,
    pub table: Region,
    /// (start bci, line) as JVMTI GetLineNumberTable returned them.
    pub jvmti: Vec<(i32, i32)>,
}

pub const ALL: [(&str, u32, &str); 4] = [
    ("jdk11", 11, include_str!("fixtures/debuginfo/jdk11.txt")),
    ("jdk17", 17, include_str!("fixtures/debuginfo/jdk17.txt")),
    ("jdk21", 21, include_str!("fixtures/debuginfo/jdk21.txt")),
    ("jdk25", 25, include_str!("fixtures/debuginfo/jdk25.txt")),
];

pub fn all() -> Vec<Recording> {
    ALL.iter()
        .map(|(name, version, text)| parse(name, *version, text))
        .collect()
}

fn hex(s: &str) -> usize {
    usize::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex")
}

fn kv<'a>(words: &[&'a str]) -> HashMap<&'a str, &'a str> {
    words.iter().filter_map(|w| w.split_once('=')).collect()
}

fn region(lines: &mut std::iter::Peekable<std::str::Lines>, header: &[&str]) -> Region {
    let kv = kv(header);
    let len: usize = kv["len"].parse().unwrap();
    let mut bytes = Vec::new();
    while bytes.len() < len {
        let line = lines.next().expect("hex line");
        for i in (0..line.len()).step_by(2) {
            bytes.push(u8::from_str_radix(&line[i..i + 2], 16).unwrap());
        }
    }
    assert_eq!(bytes.len(), len);
    Region {
        addr: hex(kv["addr"]),
        bytes,
    }
}

fn parse(name: &'static str, feature_version: u32, text: &str) -> Recording {
    let mut r = Recording {
        name,
        feature_version,
        invocation_entry_bci: 0,
        pc_desc_size: 0,
        pc_offset_field: 0,
        scope_field: 0,
        code_size: 0,
        pcs: Region {
            addr: 0,
            bytes: vec![],
        },
        scopes: Region {
            addr: 0,
            bytes: vec![],
        },
        metadata: vec![],
        metadata_addr: 0,
        truth: vec![],
        line_tables: vec![],
    };
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first().copied() {
            Some("invocation_entry_bci") => r.invocation_entry_bci = words[1].parse().unwrap(),
            Some("pcdesc") => {
                let kv = kv(&words);
                r.pc_desc_size = kv["size"].parse().unwrap();
                r.pc_offset_field = kv["pc_offset"].parse().unwrap();
                r.scope_field = kv["scope_decode_offset"].parse().unwrap();
            }
            Some("nmethod") => r.code_size = kv(&words)["code_size"].parse().unwrap(),
            Some("pcs") => r.pcs = region(&mut lines, &words),
            Some("scopes") => r.scopes = region(&mut lines, &words),
            Some("metadata") => r.metadata_addr = hex(kv(&words)["addr"]),
            Some("md") => r.metadata.push((hex(words[2]), words[3].to_string())),
            Some("truth") => {
                let kv = kv(&words);
                let frames = words[3..]
                    .iter()
                    .map(|f| {
                        let (method, rest) = f.split_once('@').unwrap();
                        let (bci, name) = rest.split_once(':').unwrap();
                        (hex(method), bci.parse().unwrap(), name.to_string())
                    })
                    .collect::<Vec<_>>();
                assert_eq!(frames.len(), kv["frames"].parse::<usize>().unwrap());
                r.truth.push(PcTruth {
                    pc_offset: kv["pc"].parse().unwrap(),
                    frames,
                });
            }
            Some("linetable") => {
                let method = words[1].to_string();
                let code_size = kv(&words)["code_size"].parse().unwrap();
                let header = lines.next().unwrap();
                let header: Vec<&str> = header.split_whitespace().collect();
                assert_eq!(header[0], "bytes");
                let table = region(&mut lines, &header);
                let jvmti_line = lines.next().unwrap();
                let words: Vec<&str> = jvmti_line.split_whitespace().collect();
                assert_eq!(words[0], "jvmti");
                let jvmti = words[2..]
                    .iter()
                    .map(|p| {
                        let (b, l) = p.split_once(':').unwrap();
                        (b.parse().unwrap(), l.parse().unwrap())
                    })
                    .collect::<Vec<_>>();
                assert_eq!(jvmti.len(), words[1].parse::<usize>().unwrap());
                r.line_tables.push(LineTableTruth {
                    method,
                    code_size,
                    table,
                    jvmti,
                });
            }
            _ => {}
        }
    }
    r
}

/// The metadata array as the bytes VM memory held.
pub fn metadata_bytes(r: &Recording) -> Vec<u8> {
    r.metadata
        .iter()
        .flat_map(|(m, _)| m.to_le_bytes())
        .collect()
}
