package com.datadoghq.profiler.internal;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The OTLP exporter's options and its link to the profiler: {@code otlp=URL} in a {@code start}
 * command makes the profiler push its recording to an OpenTelemetry Collector every
 * {@code otlpinterval} (docs/exporter.md). The options are checked here, in Java, before the
 * command reaches the core, so a bad value refuses the whole command with nothing started; the
 * exporter itself ({@code export.OtlpExporter}) needs JDK 11 and is loaded by name.
 * Not API: public only for {@code JavaProfiler} and that exporter.
 */
public final class OtlpExport {
    static final String EXPORTER_CLASS = "com.datadoghq.profiler.export.OtlpExporter";
    static final long DEFAULT_INTERVAL_MILLIS = 60_000;
    static final long MIN_INTERVAL_MILLIS = 1_000;
    static final long MAX_INTERVAL_MILLIS = 24 * 3_600_000L;
    static final int DEFAULT_BACKLOG = 10;
    static final int MAX_BACKLOG = 1_000;
    /** The backlog never holds more bytes than this, whatever {@code otlpbacklog} says. */
    public static final long BACKLOG_BYTES = 64L << 20;
    static final String DEFAULT_SERVICE = "unknown_service:java";

    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h)?");

    /** The process's export counters (kept across sessions; shown once an exporter ran). */
    static final AtomicLong EXPORTS = new AtomicLong();
    static final AtomicLong FAILURES = new AtomicLong();
    static final AtomicLong BYTES = new AtomicLong();
    static final AtomicLong DROPPED = new AtomicLong();
    static volatile boolean everStarted;

    private OtlpExport() {
    }

    /** What the exporter runs with; immutable. */
    public static final class Config {
        public final URI endpoint;
        public final long intervalMillis;
        public final int backlog;
        /** Resource attributes, in the order written (service.name first). */
        public final Map<String, String> resource;
        /** Extra request headers (OTEL_EXPORTER_OTLP_HEADERS and the _PROFILES_ one). */
        public final Map<String, String> headers;

        Config(URI endpoint, long intervalMillis, int backlog, Map<String, String> resource,
               Map<String, String> headers) {
            this.endpoint = endpoint;
            this.intervalMillis = intervalMillis;
            this.backlog = backlog;
            this.resource = Collections.unmodifiableMap(resource);
            this.headers = Collections.unmodifiableMap(headers);
        }
    }

    /** The running exporter, as the profiler sees it. */
    public interface Exporter {
        /**
         * Stops the periodic exports, runs {@code stopProfiler} (which completes the main file),
         * exports what it wrote last and tries, for a bounded time, to send the backlog. What
         * cannot be sent stays on disk for the next start.
         */
        void finish(Runnable stopProfiler);

        /** The user dumped: the main file was restarted, so it holds nothing exported yet. */
        void mainFileRestarted();
    }

    /** The profiler's side of an exporter: the export dump and the main file's path. */
    public interface Profiler {
        /** A chunk of everything since the last dump, to {@code path}, the main file untouched. */
        void exportChunk(Path path);

        /** The main file ({@code file=}, expanded); null while idle. */
        String recordingFile();

        /** {@code JavaProfiler.stop()}: the JVM's shutdown hook ends the session with it. */
        void stopSession();

        /** Runs {@code action} under the lock that orders dumps, exports and stop. */
        void locked(Runnable action);
    }

    /**
     * The exporter's configuration if {@code command} has {@code otlp=}, else null.
     *
     * @throws IllegalArgumentException naming the option and what is wrong with its value, or an
     *                                  exporter option without {@code otlp=}
     */
    public static Config parse(String command, Map<String, String> env) {
        String url = null;
        String other = null;
        long interval = DEFAULT_INTERVAL_MILLIS;
        int backlog = DEFAULT_BACKLOG;
        String service = null;
        Map<String, String> attrs = new LinkedHashMap<>();
        for (String token : command.split(",")) {
            if (token.isEmpty()) {
                continue;
            }
            int eq = token.indexOf('=');
            String key = (eq < 0 ? token : token.substring(0, eq)).toLowerCase(Locale.ROOT);
            String value = eq < 0 ? "" : token.substring(eq + 1);
            switch (key) {
                case "otlp":
                    url = value;
                    checkUrl(value);
                    break;
                case "otlpinterval":
                    other = key;
                    interval = interval(value);
                    break;
                case "otlpbacklog":
                    other = key;
                    backlog = backlog(value);
                    break;
                case "otlpservice":
                    other = key;
                    if (value.isEmpty()) {
                        throw bad(key, value, "must not be empty");
                    }
                    service = value;
                    break;
                case "otlpattr": {
                    other = key;
                    int kv = value.indexOf('=');
                    if (kv <= 0) {
                        throw bad(key, value, "expected KEY=VALUE, e.g. otlpattr=deployment.environment=prod");
                    }
                    attrs.put(value.substring(0, kv), value.substring(kv + 1));
                    break;
                }
                default:
                    break;
            }
        }
        if (url == null) {
            if (other != null) {
                throw new IllegalArgumentException("'" + other + "' needs otlp=URL (the collector's OTLP/HTTP profiles endpoint)");
            }
            return null;
        }
        Map<String, String> resource = new LinkedHashMap<>();
        resource.put("service.name", DEFAULT_SERVICE);
        // Precedence, lowest first: OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME, then options.
        resource.putAll(pairs(env.get("OTEL_RESOURCE_ATTRIBUTES"), "OTEL_RESOURCE_ATTRIBUTES"));
        String envService = env.get("OTEL_SERVICE_NAME");
        if (envService != null && !envService.trim().isEmpty()) {
            resource.put("service.name", envService.trim());
        }
        resource.putAll(attrs);
        if (service != null) {
            resource.put("service.name", service);
        }
        Map<String, String> headers = new LinkedHashMap<>();
        headers.putAll(pairs(env.get("OTEL_EXPORTER_OTLP_HEADERS"), "OTEL_EXPORTER_OTLP_HEADERS"));
        headers.putAll(pairs(env.get("OTEL_EXPORTER_OTLP_PROFILES_HEADERS"), "OTEL_EXPORTER_OTLP_PROFILES_HEADERS"));
        return new Config(URI.create(url), interval, backlog, resource, headers);
    }

    /** The command's action: the last action key, lower-cased ("" when none), as the core reads it. */
    public static String action(String command) {
        String action = "";
        for (String token : command.split(",")) {
            int eq = token.indexOf('=');
            String key = (eq < 0 ? token : token.substring(0, eq)).toLowerCase(Locale.ROOT);
            switch (key) {
                case "start":
                case "resume":
                case "stop":
                case "check":
                case "status":
                case "list":
                case "version":
                    action = key;
                    break;
                default:
                    break;
            }
        }
        return action;
    }

    /** Whether the command names the recording file. */
    public static boolean hasFile(String command) {
        for (String token : command.split(",")) {
            if (token.toLowerCase(Locale.ROOT).startsWith("file=")) {
                return true;
            }
        }
        return false;
    }

    /**
     * Where a session that exports records when the command gives no {@code file=}: the temp
     * directory, named for the process (the core expands {@code %p}).
     */
    public static String defaultFile() {
        return java.nio.file.Paths.get(System.getProperty("java.io.tmpdir"), "ddprof-otlp-%p.jfr").toString();
    }

    private static void checkUrl(String value) {
        if (value.isEmpty()) {
            throw bad("otlp", value, "must not be empty; expected an http:// or https:// URL such as "
                    + "http://127.0.0.1:4318/v1development/profiles");
        }
        URI uri;
        try {
            uri = new URI(value);
        } catch (URISyntaxException e) {
            throw bad("otlp", value, "not a URL (" + e.getReason() + ")");
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https")) {
            throw bad("otlp", value, "expected an http:// or https:// URL");
        }
        if (uri.getHost() == null || uri.getHost().isEmpty()) {
            throw bad("otlp", value, "the URL has no host");
        }
    }

    static long interval(String value) {
        Matcher m = DURATION.matcher(value);
        if (!m.matches()) {
            throw bad("otlpinterval", value, "expected a duration such as 60s, 500ms, 5m or 1h (bare = seconds)");
        }
        long n;
        try {
            n = Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            throw bad("otlpinterval", value, "too large");
        }
        String unit = m.group(2) == null ? "s" : m.group(2);
        long factor = unit.equals("ms") ? 1 : unit.equals("s") ? 1_000 : unit.equals("m") ? 60_000 : 3_600_000;
        long millis = n > MAX_INTERVAL_MILLIS ? Long.MAX_VALUE : n * factor;
        if (millis < MIN_INTERVAL_MILLIS || millis > MAX_INTERVAL_MILLIS) {
            throw bad("otlpinterval", value, "must be between 1s and 24h");
        }
        return millis;
    }

    private static int backlog(String value) {
        try {
            int n = Integer.parseInt(value);
            if (n >= 1 && n <= MAX_BACKLOG) {
                return n;
            }
        } catch (NumberFormatException e) {
            // falls through to the error
        }
        throw bad("otlpbacklog", value, "expected a whole number of exports from 1 to " + MAX_BACKLOG);
    }

    /**
     * {@code key=value,key=value} as the OTel environment variables write them (values
     * percent-encoded). A malformed value is ignored whole, as the specification asks, with a
     * warning: the environment must not keep the application from starting.
     */
    static Map<String, String> pairs(String raw, String variable) {
        Map<String, String> out = new LinkedHashMap<>();
        if (raw == null || raw.trim().isEmpty()) {
            return out;
        }
        try {
            for (String item : raw.split(",")) {
                if (item.trim().isEmpty()) {
                    continue;
                }
                int eq = item.indexOf('=');
                if (eq <= 0 || item.substring(0, eq).trim().isEmpty()) {
                    throw new IllegalArgumentException("'" + item.trim() + "' is not key=value");
                }
                // '+' is a literal plus here (percent-encoding, not form encoding).
                out.put(item.substring(0, eq).trim(),
                        URLDecoder.decode(item.substring(eq + 1).trim().replace("+", "%2B"), "UTF-8"));
            }
        } catch (IllegalArgumentException | java.io.UnsupportedEncodingException e) {
            System.err.println("[ddprof] ignoring " + variable + ": " + e.getMessage());
            return new LinkedHashMap<>();
        }
        return out;
    }

    private static IllegalArgumentException bad(String option, String value, String reason) {
        return new IllegalArgumentException("Invalid value '" + value + "' for option '" + option + "': " + reason);
    }

    /** Whether this runtime can run the exporter (JDK 11 or later: its classes are Java 11). */
    public static boolean available() {
        try {
            Class.forName(EXPORTER_CLASS, false, OtlpExport.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** Starts the exporter of {@code config} (call {@link #available} first). */
    public static Exporter start(Config config, Profiler profiler) throws ReflectiveOperationException {
        Class<?> c = Class.forName(EXPORTER_CLASS, true, OtlpExport.class.getClassLoader());
        Object e = c.getMethod("start", Config.class, Profiler.class).invoke(null, config, profiler);
        everStarted = true;
        return (Exporter) e;
    }

    /** The counters, for {@code JavaProfiler.getDebugCounters}; empty until an exporter ran. */
    public static void addCounters(Map<String, Long> to) {
        if (everStarted) {
            to.put("otlp_exports", EXPORTS.get());
            to.put("otlp_export_failures", FAILURES.get());
            to.put("otlp_bytes", BYTES.get());
            to.put("otlp_dropped", DROPPED.get());
        }
    }

    /** Used by the java11 exporter (another package): the counters it adds to. */
    public static AtomicLong counter(String name) {
        switch (name) {
            case "otlp_exports":
                return EXPORTS;
            case "otlp_export_failures":
                return FAILURES;
            case "otlp_bytes":
                return BYTES;
            case "otlp_dropped":
                return DROPPED;
            default:
                throw new IllegalArgumentException(name);
        }
    }
}
