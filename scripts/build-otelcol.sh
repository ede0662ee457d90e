#!/usr/bin/env bash
# Builds a minimal OpenTelemetry Collector for the exporter's optional end-to-end test
# (export/OtelCollectorTest, docs/exporter.md): the OTLP receiver, the OTLP/HTTP and debug
# exporters, at one collector release, with the collector's builder from the Go module proxy.
# Output: target/otelcol/otelcol-ddprof (the test skips, saying so, while it is missing).
# Takes about 15 minutes of CPU the first time; CI does not run it. Needs Go 1.25 or later.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
VERSION=0.165.0 # every collector module at one release
OUT=target/otelcol
BIN="$OUT/otelcol-ddprof"
if [[ -x "$BIN" && "${1:-}" != "--force" ]]; then
  echo "$BIN is built (--force rebuilds)"
  exit 0
fi
mkdir -p "$OUT"
cat > "$OUT/manifest.yaml" <<YAML
dist:
  name: otelcol-ddprof
  description: ddprof's test collector (OTLP in; OTLP/HTTP and debug out)
  output_path: $(pwd)/$OUT/build
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v$VERSION
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/otlphttpexporter v$VERSION
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter v$VERSION
YAML
go run "go.opentelemetry.io/collector/cmd/builder@v$VERSION" --config "$OUT/manifest.yaml"
cp "$OUT/build/otelcol-ddprof" "$BIN"
echo "built $BIN"
