package com.datadoghq.profiler;

/** The CPU architecture, told from {@code os.arch}. */
public enum Arch {
    x64("x86_64", "amd64", "k8"),
    x86("x86", "i386", "i486", "i586", "i686"),
    arm("ARM", "aarch32"),
    arm64("arm64", "aarch64"),
    unknown();

    /** The {@code os.arch} spellings of this architecture, compared exactly. */
    private final String[] identifiers;

    Arch(String... identifiers) {
        this.identifiers = identifiers;
    }

    /** The architecture one of whose {@code os.arch} spellings is {@code identifier}, else {@link #unknown}. */
    public static Arch of(String identifier) {
        if (identifier != null) {
            for (Arch arch : values()) {
                for (String id : arch.identifiers) {
                    if (id.equals(identifier)) {
                        return arch;
                    }
                }
            }
        }
        return unknown;
    }

    /** The running architecture, from the {@code os.arch} property. */
    public static Arch current() {
        return of(System.getProperty("os.arch"));
    }
}
