#!/usr/bin/env bash
# Run a benchmark from anywhere:
#   bench/run.sh [--quick] [flags]                  the stdio benchmark (bench_stdio.py)
#   bench/run.sh stdio|http|connect|manager|toolbox|celery [flags]
#                                                   bench_stdio.py, bench_http.py, bench_connect.py,
#                                                   bench_manager.py, bench_toolbox.py, bench_celery.py
#   bench/run.sh all [--quick]                      all four, one after the other
# Results: stdout and bench/results/ (latest.md, latest-http.md, latest-connect.md,
# latest-manager.md, latest-toolbox.md, latest-celery.md, + .json).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
python="${PYTHON:-python3}"
if ! "$python" -c "import mcp" 2>/dev/null; then
    echo "note: the official SDK is not installed (pip install 'mcp==2.3.0'); its columns are skipped" >&2
fi
case "${1:-}" in
    stdio|http|connect|manager|toolbox|celery) name="$1"; shift; exec "$python" "bench/bench_$name.py" "$@" ;;
    all)
        shift
        for name in stdio http connect manager; do "$python" "bench/bench_$name.py" "$@"; done ;;
    *) exec "$python" bench/bench_stdio.py "$@" ;;
esac
