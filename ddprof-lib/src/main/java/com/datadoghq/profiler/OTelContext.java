package com.datadoghq.profiler;

import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * The OpenTelemetry process context (OTEP #4719): service, environment, instance id, SDK,
 * host and the thread-context attribute keys of this process, published for profilers and
 * other readers outside the process.
 *
 * <p>On Linux the context sits in a one-page mapping named {@code OTEL_CTX} (a memfd, so
 * {@code /proc/<pid>/maps} shows {@code /memfd:OTEL_CTX (deleted)}, or {@code [anon:OTEL_CTX]}
 * where the kernel names anonymous mappings), readable and never executable, holding a header
 * ({@code "OTEL_CTX"}, version 2, payload size, publication time, payload address) that points
 * at a protobuf {@code ProcessContext} message of OpenTelemetry resource attributes. Layout and
 * update protocol are upstream's; docs/context.md, "The process context", has the details.
 * Elsewhere every call does nothing and {@link #readProcessContext()} answers {@code null}.
 *
 * <p>Same API as upstream java-profiler's class, so the tracer's calls (its
 * {@code DdprofLibraryLoader} and {@code ProcessContext} classes) work unchanged. Thread-safe.
 * Nothing here throws into the caller, except {@link #initializeAllContext} for a {@code null}
 * key array, as upstream.
 */
public final class OTelContext {
    private static final class SingletonHolder {
        static final OTelContext INSTANCE = new OTelContext(null, null, null);
    }

    /** The published process context, as read back by {@link #readProcessContext()}. */
    public static final class ProcessContext {
        public final String deploymentEnvironmentName;
        public final String hostName;
        public final String serviceInstanceId;
        public final String serviceName;
        public final String serviceVersion;
        public final String telemetrySdkLanguage;
        public final String telemetrySdkVersion;
        public final String telemetrySdkName;
        /**
         * The published {@code threadlocal.attribute_key_map}: {@code datadog.local_root_span_id}
         * first (key 0 of the thread record), then the registered keys in slot order; {@code null}
         * if none was published.
         */
        public final String[] attributeKeyMap;

        public ProcessContext(String deploymentEnvironmentName, String hostName, String serviceInstanceId,
                String serviceName, String serviceVersion, String telemetrySdkLanguage,
                String telemetrySdkVersion, String telemetrySdkName, String[] attributeKeyMap) {
            this.deploymentEnvironmentName = deploymentEnvironmentName;
            this.hostName = hostName;
            this.serviceInstanceId = serviceInstanceId;
            this.serviceName = serviceName;
            this.serviceVersion = serviceVersion;
            this.telemetrySdkLanguage = telemetrySdkLanguage;
            this.telemetrySdkVersion = telemetrySdkVersion;
            this.telemetrySdkName = telemetrySdkName;
            this.attributeKeyMap = attributeKeyMap;
        }

        @Override
        public String toString() {
            return String.format("ProcessContext{deploymentEnvironmentName='%s', hostName='%s', serviceInstanceId='%s', "
                    + "serviceName='%s', serviceVersion='%s', telemetrySdkLanguage='%s', telemetrySdkVersion='%s', "
                    + "telemetrySdkName='%s', attributeKeyMap=%s}",
                    deploymentEnvironmentName, hostName, serviceInstanceId, serviceName, serviceVersion,
                    telemetrySdkLanguage, telemetrySdkVersion, telemetrySdkName, Arrays.toString(attributeKeyMap));
        }
    }

    /** The shared instance (the library from the default location, problems printed to stderr). */
    public static OTelContext getInstance() {
        return SingletonHolder.INSTANCE;
    }

    private final boolean loaded;
    private final Consumer<Throwable> errorHandler;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

    /**
     * Loads the native library as {@link LibraryLoader} does (or uses the one already loaded).
     *
     * @param libLocation the library file, or {@code null} for the default
     * @param scratchDir where the bundled library may be extracted, or {@code null}
     * @param errorHandler told why the library could not be loaded (or a native is missing);
     *                     {@code null}: a warning on stderr
     */
    public OTelContext(String libLocation, String scratchDir, Consumer<Throwable> errorHandler) {
        this.errorHandler = errorHandler;
        LibraryLoader.Result result = LibraryLoader.builder()
                .withLibraryLocation(libLocation)
                .withScratchDir(scratchDir)
                .load();
        if (!result.succeeded) {
            report(result.error != null ? result.error
                    : new IllegalStateException("the native library is not available"));
        }
        this.loaded = result.succeeded;
    }

    private void report(Throwable t) {
        try {
            if (errorHandler != null) {
                errorHandler.accept(t);
            } else {
                System.err.println("[ddprof] [WARNING] OTel process context unavailable: " + t);
            }
        } catch (Throwable ignored) {
            // A failing handler must not fail the caller.
        }
    }

    /**
     * The published context read back through its mapping, or {@code null} if nothing is
     * published (or not on Linux, or the library is not loaded).
     */
    public ProcessContext readProcessContext() {
        if (!loaded) {
            return null;
        }
        lock.readLock().lock();
        try {
            return readProcessCtx0();
        } catch (LinkageError e) {
            report(e);
            return null;
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Publishes the process context without custom attribute keys (the attribute key map is
     * only the reserved {@code datadog.local_root_span_id}); what released tracers call.
     *
     * @deprecated as upstream: use {@link #initializeAllContext}
     */
    @Deprecated
    public void setProcessContext(String env, String hostname, String runtimeId, String service, String version,
            String tracerVersion) {
        if (!loaded) {
            return;
        }
        // First: from here on each thread's next context write gives its record the entries a reader of this context reads.
        ContextWriter.otelReadersExist();
        lock.writeLock().lock();
        try {
            setProcessCtx0(env, hostname, runtimeId, service, version, tracerVersion);
        } catch (LinkageError e) {
            report(e);
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Publishes the process context and the thread-context attribute keys, replacing what was
     * published before. Values go out as OpenTelemetry resource attributes:
     * {@code deployment.environment.name} = env, {@code host.name} = hostname,
     * {@code service.instance.id} = runtimeId, {@code service.name} = service,
     * {@code service.version} = version, {@code telemetry.sdk.version} = tracerVersion,
     * {@code telemetry.sdk.language} = {@code java}, {@code telemetry.sdk.name} =
     * {@code dd-trace-java}; a {@code null} value is published as empty.
     *
     * <p>{@code attributeKeys} are the names of {@link JavaProfiler#setContextValue(int, String)}'s
     * slots in order; at most 10 are published, after {@code datadog.local_root_span_id}. A
     * {@code null} element, or a key or value longer than 4096 UTF-8 bytes (or a resource
     * message over 16383 bytes), skips the publication with a warning: the previous context
     * stays.
     *
     * @throws NullPointerException if {@code attributeKeys} is null
     */
    public void initializeAllContext(String env, String hostname, String runtimeId, String service, String version,
            String tracerVersion, String[] attributeKeys) {
        Objects.requireNonNull(attributeKeys, "attributeKeys");
        if (!loaded) {
            return;
        }
        // First: from here on each thread's next context write gives its record the entries a reader of this context reads.
        ContextWriter.otelReadersExist();
        lock.writeLock().lock();
        try {
            setProcessCtx0(env, hostname, runtimeId, service, version, tracerVersion, attributeKeys);
        } catch (LinkageError e) {
            report(e);
        } finally {
            lock.writeLock().unlock();
        }
    }

    // Upstream's names. Both shapes of setProcessCtx0 are exported by the library under their
    // JNI long names (api/otel.rs), so java-profiler 1.34's class, which has only the first,
    // binds too.
    private static native void setProcessCtx0(String env, String hostname, String runtimeId, String service,
            String version, String tracerVersion);

    private static native void setProcessCtx0(String env, String hostname, String runtimeId, String service,
            String version, String tracerVersion, String[] attributeKeys);

    private static native ProcessContext readProcessCtx0();
}
