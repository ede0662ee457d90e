package com.datadoghq.profiler.testing;

import com.datadoghq.profiler.JavaProfiler;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * For test classes that drive this JVM's profiler ({@link TestEnv#profiler()}) with
 * {@code @ExtendWith(ProfilerExtension.class)}: a {@link JavaProfiler} parameter of the
 * constructor, a lifecycle method or a test is that profiler, and the profiler is stopped after
 * each test and after the class. The profiler is one per JVM and every test class of a fork
 * shares it, so a test that fails mid-session must not hand the next one a running profiler
 * (its {@code start} would fail with "already started", hiding the real failure).
 */
public final class ProfilerExtension implements ParameterResolver, AfterEachCallback, AfterAllCallback {
    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == JavaProfiler.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        return TestEnv.profiler();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        TestEnv.stopQuietly(TestEnv.profiler());
    }

    @Override
    public void afterAll(ExtensionContext context) {
        TestEnv.stopQuietly(TestEnv.profiler());
    }
}
