//! The process's native code, read off the signal path: the libraries and executables mapped
//! into it (`mappings`), their ELF files (`elf`), their symbols (`symbols`) and unwind rows
//! (`eh_frame`), and the kernel's symbols (`kallsyms`).

pub mod eh_frame;
pub mod elf;
pub mod kallsyms;
pub mod mappings;
pub mod symbols;
