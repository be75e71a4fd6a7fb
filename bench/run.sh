#!/usr/bin/env bash
# Run the stdio benchmark from anywhere: bench/run.sh [--quick] [other bench_stdio.py flags]
# Results: stdout, bench/results/latest.md and bench/results/latest.json.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
python="${PYTHON:-python3}"
if ! "$python" -c "import mcp" 2>/dev/null; then
    echo "note: the official SDK is not installed (pip install 'mcp==2.3.0'); its columns are skipped" >&2
fi
exec "$python" bench/bench_stdio.py "$@"
