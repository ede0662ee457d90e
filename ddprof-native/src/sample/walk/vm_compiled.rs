//! The VM walker's compiled frames (`VmWalker::compiled_frame`): an nmethod's header facts
//! (kept across walks by compile id, `super::nmethod_cache`) and the inline chain at a pc (kept
//! across walks by pc and compile id, `super::chain_cache`), from its PcDescs and scopes.
//! Signal-safe, as the rest of the walker.

use super::*;
use crate::sample::walk::chain_cache::MAX_CACHED;

impl VmWalker {
    /// What a compiled frame needs of its nmethod's header, read from the blob (about six
    /// protected loads; the debug info's ranges are read when a frame first needs them).
    /// Signal-safe.
    fn read_nmethod(
        cb: &layout::CodeBlobGroup,
        nm: &layout::NMethodGroup,
        blob: Blob,
        compile_id: i32,
    ) -> Option<NmethodFacts> {
        let code_begin = cb.code_begin(blob)?;
        let frame_words = cb.frame_size_words(blob)?;
        let method = nm.method(blob)?;
        let frame_type = match nm.comp_level(blob) {
            Some(4) | None => frame_type::JIT_COMPILED,
            Some(_) => frame_type::C1_COMPILED,
        };
        let complete = cb
            .frame_complete_offset(blob)
            .map_or(code_begin, |o| code_begin.wrapping_add(o as usize));
        Some(NmethodFacts {
            blob: blob.addr,
            compile_id,
            code_begin,
            frame_bytes: frame_words * 8,
            method,
            frame_type,
            complete,
            debug: None,
        })
    }

    /// C1/C2 nmethod or native wrapper (docs/hotspot.md 3.5-3.7, 4.3, 4.5).
    #[allow(clippy::too_many_arguments)]
    #[link_section = sample_path_section!()]
    pub(super) fn compiled_frame(
        &self,
        blob: Blob,
        cur: Cursor,
        depth: usize,
        regs: &Regs,
        stack: &OwnStack,
        out: &mut Out,
    ) -> Step {
        let l = self.layout;
        let (Some(cb), Some(nm), Some(mg)) =
            (l.code_blob.as_ref(), l.nmethod.as_ref(), l.method.as_ref())
        else {
            return Step::Fail(reason::UNAVAILABLE);
        };
        let facts = match out.nmethods.get(blob.addr) {
            Some(facts) => facts,
            None => {
                let Some(compile_id) = nm.compile_id(blob) else {
                    return Step::Fail(reason::BAD_FRAME);
                };
                let facts = match self.nmethods.get(blob.addr, compile_id) {
                    Some(facts) => facts,
                    None => {
                        let Some(facts) = Self::read_nmethod(cb, nm, blob, compile_id) else {
                            return Step::Fail(reason::BAD_FRAME);
                        };
                        self.nmethods.put(&facts);
                        facts
                    }
                };
                out.nmethods.put(facts);
                facts
            }
        };
        let (code_begin, frame_bytes, m, frame_type, complete) = (
            facts.code_begin,
            facts.frame_bytes,
            facts.method,
            facts.frame_type,
            facts.complete,
        );

        // Native wrappers are told by their Method's flags, but only where the debug
        // info has nothing to say (they have no PcDescs): a compiled Java frame then
        // never touches its Method, whose jmethodID usually comes from the cache.
        if depth == 0 && cur.pc < complete {
            // Prologue: no debug info for these pcs; the method itself is running.
            self.push_method_or_native(out, method::is_native(mg, m), m, 0, frame_type);
        } else {
            self.push_scopes(blob, m, cur.pc, code_begin, depth, frame_type, out);
        }

        if depth == 0 {
            // The top frame may be caught in its prologue or epilogue (docs/hotspot.md 4.5).
            let entry = if cur.pc < complete {
                nm.verified_entry_point(cb, blob).unwrap_or(0)
            } else {
                0
            };
            match arch::compiled_top(stack, cur, regs, entry, complete, frame_bytes) {
                Top::Whole => {}
                Top::Caller(c) => return Step::Next(c),
                Top::Broken => return Step::Fail(reason::BAD_FRAME),
            }
        }
        if frame_bytes == 0 {
            return Step::Fail(reason::BAD_FRAME);
        }
        sized_frame_caller(stack, cur.sp + frame_bytes)
    }

    /// Frames of one nmethod pc, innermost inlined scope first; a native wrapper (no
    /// debug info) gives its one native frame.
    #[allow(clippy::too_many_arguments)]
    #[link_section = sample_path_section!()]
    fn push_scopes(
        &self,
        blob: Blob,
        m: usize,
        pc: usize,
        code_begin: usize,
        depth: usize,
        frame_type: u8,
        out: &mut Out,
    ) {
        // The top frame's pc is arbitrary: like AsyncGetCallTrace, take the first PcDesc
        // after it. Return addresses have an exact PcDesc.
        let offset = pc
            .wrapping_sub(code_begin)
            .wrapping_add((depth == 0) as usize);
        let key = code_begin.wrapping_add(offset);
        if out.repeat_chain(key) {
            return;
        }
        let before = out.counts();
        // The compile id read for this nmethod in this walk (compiled_frame keeps its facts).
        let compile_id = out.nmethods.get(blob.addr).map(|f| f.compile_id);
        // A cached chain needs room for MAX_CACHED scopes only: a decode's 64-scope buffer
        // (1 KiB, zeroed each time) is set up only on a miss.
        let mut cached = [ScopeFrame { method: 0, bci: 0 }; MAX_CACHED];
        if let Some(count) = compile_id.and_then(|id| self.chains.get(key, id, &mut cached)) {
            self.push_chain(m, frame_type, cached.get(..count).unwrap_or(&[]), out);
            out.remember_chain(key, before);
            return;
        }
        let mut scopes = [ScopeFrame { method: 0, bci: 0 }; MAX_SCOPES];
        let chain = self.decode_chain(blob, code_begin, offset, out, &mut scopes);
        if let (Some(id), ChainEnd::Complete) = (compile_id, chain.end) {
            self.chains
                .put(key, id, scopes.get(..chain.count).unwrap_or(&[]));
        }
        if chain.count == 0 || !matches!(chain.end, ChainEnd::Complete | ChainEnd::Truncated) {
            if self
                .layout
                .method
                .as_ref()
                .is_some_and(|mg| method::is_native(mg, m))
            {
                // A native wrapper: HotSpot gives them an empty PcDesc table.
                self.push_method(out, m, -1, frame_type::NATIVE);
            } else {
                Counter::WalkvmNoScope.inc();
                self.push_method(out, m, 0, frame_type);
            }
            return;
        }
        self.push_chain(m, frame_type, scopes.get(..chain.count).unwrap_or(&[]), out);
        out.remember_chain(key, before);
    }

    /// The frames of a non-empty inline chain of the nmethod of `m`: its scopes innermost
    /// first, the last one the compiled method's (`frame_type`), the others inlined.
    fn push_chain(&self, m: usize, frame_type: u8, scopes: &[ScopeFrame], out: &mut Out) {
        let last = scopes.len().saturating_sub(1);
        for (i, s) in scopes.iter().enumerate() {
            let t = if i == last {
                frame_type
            } else {
                frame_type::INLINED
            };
            let sm = if s.method == 0 { m } else { s.method };
            self.push_method(out, sm, s.bci.max(0), t);
        }
    }

    /// The inline chain at `offset` of the nmethod at `blob`, from its PcDescs and scopes
    /// (read once per walk where this walk met the nmethod before). Signal-safe.
    fn decode_chain(
        &self,
        blob: Blob,
        code_begin: usize,
        offset: usize,
        out: &mut Out,
        scopes: &mut [ScopeFrame],
    ) -> debuginfo::ScopeChain {
        let Some(nm) = self.layout.nmethod.as_ref() else {
            return debuginfo::ScopeChain {
                count: 0,
                end: ChainEnd::NoPcDesc,
            };
        };
        let known = out.nmethods.get(blob.addr).and_then(|f| f.debug);
        let debug = known.unwrap_or_else(|| {
            let (pcs_begin, pcs_end) = nm.pc_desc_range(blob)?;
            let data = nm.scopes_data_begin(blob)?;
            let (meta_begin, meta_end) = nm.metadata_range(blob)?;
            Some(debuginfo::NmethodDebugInfo {
                pcs_begin,
                pcs_end,
                scopes: NmethodScopes {
                    data,
                    data_len: usize::MAX / 4,
                    metadata: meta_begin,
                    metadata_len: meta_end.saturating_sub(meta_begin) / 8,
                },
            })
        });
        if known.is_none() {
            if let Some(facts) = out.nmethods.get_mut(blob.addr) {
                facts.debug = Some(debug);
                self.nmethods.put(facts);
            }
        }
        let pc_desc = debug.as_ref().and_then(|d| {
            self.pc_descs.find(
                &SiteMemory(Site::PcDesc),
                &self.pc_desc,
                d,
                code_begin,
                offset,
            )
        });
        match (debug, pc_desc) {
            (Some(d), Some(pd)) => debuginfo::decode_scopes(
                &SiteMemory(Site::Scope),
                &self.format,
                &d.scopes,
                pd.scope_decode_offset,
                scopes,
            ),
            _ => debuginfo::ScopeChain {
                count: 0,
                end: ChainEnd::NoPcDesc,
            },
        }
    }
}
