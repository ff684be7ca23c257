#!/usr/bin/env bash
# Smoke runs of the Python benchmarks against the installed package: small shapes, and
# peers that are not installed are skipped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python bench/compare.py --quick
python bench/exact_batch.py --quick
python bench/output_cache.py --repeats 3
