#!/usr/bin/env bash
# Compile time of the heaviest job translation units in two checkouts,
# alternating A and B file by file, REPEAT rounds (default 3), with the
# build's own flags (run `make build` in each first, for the generated
# headers). Prints every run (wall seconds, CPU seconds = user + system, the
# compiler's peak RSS) and per file the median CPU seconds of each side and
# B/A. CPU seconds are what to compare on a shared machine: wall time there
# also counts the time the compiler waited for a core.
#   bench/compile_times.sh CHECKOUT_A CHECKOUT_B
set -euo pipefail
A=$1
B=$2
REPEAT=${REPEAT:-3}
FILES=${FILES:-"examples/running_sum/running_sum.cc examples/nexmark/queries_joins.cc examples/nexmark/queries_updating.cc"}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for i in $(seq "$REPEAT"); do
  for f in $FILES; do
    for side in A B; do
      root=$A; [ "$side" = B ] && root=$B
      stats=$( { /usr/bin/time -f "%e %U %S %M" g++ -DWEIR_TEST_POINTS=1 -I"$root" -I"$root/include" \
        -I"$root/build/generated/include" -O2 -g -Wall -Wextra -Wno-unused-parameter -std=c++20 \
        -c "$root/$f" -o /dev/null 2>&1 >/dev/null; } | tail -1)
      read -r wall user sys rss <<<"$stats"
      cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
      echo "$f $side wall=${wall}s cpu=${cpu}s rss=${rss}KB"
      echo "$f $side $cpu" >>"$results"
    done
  done
done
echo
printf "%-42s %12s %12s %8s\n" file A_cpu_median B_cpu_median B/A
for f in $FILES; do
  med() { awk -v f="$f" -v s="$1" '$1 == f && $2 == s {print $3}' "$results" | sort -n |
          awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
  a=$(med A); b=$(med B)
  printf "%-42s %12s %12s %8.2f\n" "$f" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print b / a}')"
done
