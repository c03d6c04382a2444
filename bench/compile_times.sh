#!/usr/bin/env bash
# Compile time of the heaviest job translation units in two checkouts,
# alternating, with the build's own flags (run `make build` in each first,
# for the generated headers). Prints wall seconds and the compiler's peak
# RSS per file.
#   bench/compile_times.sh CHECKOUT_A CHECKOUT_B
set -euo pipefail
A=$1
B=$2
FILES=${FILES:-"examples/running_sum/running_sum.cc examples/nexmark/queries_joins.cc examples/nexmark/queries_updating.cc"}
for f in $FILES; do
  for root in "$A" "$B"; do
    /usr/bin/time -f "$root $f %e s %M KB" g++ -DWEIR_TEST_POINTS=1 -I"$root" -I"$root/include" \
      -I"$root/build/generated/include" -O2 -g -Wall -Wextra -Wno-unused-parameter -std=c++20 \
      -c "$root/$f" -o /dev/null 2>&1 | grep -v warning || true
  done
done
