/**
 * The in-process OTLP exporter ({@code otlp=URL}, docs/exporter.md) and what it converts a
 * recording through: the JFR reader ({@link com.datadoghq.profiler.export.JfrProfileReader}), the
 * profile model ({@link com.datadoghq.profiler.export.Profile}) and the OTLP encoder
 * ({@link com.datadoghq.profiler.export.Otlp}). They run in the service's JVM, so they are in the
 * library jar; the command-line tools (com.datadoghq:ddprof-tools) convert through them too.
 * Java 11, loaded by name from {@code internal.OtlpExport}. Not API: public for the tools only.
 */
package com.datadoghq.profiler.export;
