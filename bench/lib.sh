# Shared by the bench scripts (sourced, not run).

# The median line of REPEAT lines on stdin, ordered numerically by the first
# field: median REPEAT < runs
median() { sort -n | awk -v r="$1" 'NR == int((r + 1) / 2) {print}'; }

# The fields of one `weir nexmark` run's output (on stdin), on one line:
# events/s per core, events/s, cores, checkpoints completed, peak RSS (MB).
nexmark_fields() {
  awk '/events\/s per core/ {pc = $4} /^events\/s:/ {eps = $2} /cpu time/ {c = $5; gsub(/\(/, "", c)}
       /checkpoints completed/ {cp = $3} /^peak rss/ {rss = $3}
       END {print pc, eps, c, cp, rss}'
}
