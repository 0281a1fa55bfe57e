# SPDX-License-Identifier: MIT
# The table `make demo` prints, from bench/run's results.csv
# (platform,scenario,strategy,param,metric,value,ratio,reps).
function cell(p, key,   v) {
  v = val[p, key]
  if (v == "") return sprintf("%9s", "-")
  if (v + 0 >= 100) return sprintf("%9.0f", v)
  return sprintf("%9.2f", v)
}
# v(p, row, strategy): the figure, or -1 when it was not measured.
function v(p, row, strategy,   x) {
  x = val[p, row, strategy]
  return x == "" ? -1 : x + 0
}
# A ratio to blocking as a percentage over it, "+0%" rather than "-0%".
function pct(r,   x) {
  x = int((r - 1) * 100 + (r >= 1 ? 0.5 : -0.5))
  return (x >= 0 ? "+" : "") x "%"
}
# One line of reading under each row of the platform's table.
function read_figures(p,   e, s, y, b, w, a, c) {
  print "  Reading:"
  e = v(p, "s1", "event"); s = v(p, "s1", "sleep1"); y = v(p, "s1", "yield")
  w = v(p, "s1", "set"); a = v(p, "s1", "aset"); c = v(p, "s1", "spawn")
  if (e >= 0 && s >= 0 && y >= 0)
    printf "  - row 1: on one CPU what exceeds 1.00 is the wait's own " \
      "cost:\n    event %s,%s%s%s sleep1 %s, yield %s%s.\n", pct(e), \
      (w >= 0 ? " set " pct(w) "," : ""), (a >= 0 ? " aset " pct(a) "," : ""), \
      (c >= 0 ? " spawn " pct(c) "," : ""), pct(s), pct(y), \
      (e < 0.995 || s < 0.995 || y < 0.995 || (w >= 0 && w < 0.995) || \
       (a >= 0 && a < 0.995) || (c >= 0 && c < 0.995)) ? \
      " (below 1.00: fewer, larger reads than blocking, or noise)" : ""
  e = v(p, "s3", "event"); s = v(p, "s3", "sleep1"); y = v(p, "s3", "yield")
  if (e >= 0 && s >= 0 && y >= 0)
    printf "  - row 2: 1000 is a whole CPU; event (%.2f) sleeps in the " \
      "kernel, sleep1 (%.0f) checks\n    64 handles every millisecond, " \
      "yield (%.0f) never stops checking%s.\n", e, s, y, \
      (p == "linux" ? "" : ", but under Wine\n    each check waits for " \
       "the wineserver, whose CPU is not in this row")
  e = v(p, "s4", "event"); s = v(p, "s4", "sleep1"); b = v(p, "s4", "blocking")
  if (e < 0 || s < 0 || b < 0)
    return
  if (p == "linux")
    printf "  - row 3: a round trip is two wake-ups; event %.0f us against a " \
      "blocking read's\n    %.0f us, sleep1 adds up to a 1 ms sleep to " \
      "each wake-up.\n", e, b
  else if (s < e)
    printf "  - row 3: sleep1 (%.0f us) beats event (%.0f us) here only " \
      "because under Wine a Sleep(1)\n    lasts about 1.3 ms (Windows: " \
      "15.6 ms, one timer tick) while each event wake-up costs\n    about " \
      "12 wineserver requests; on Windows sleep1 waits for the tick.\n", s, e
  else
    printf "  - row 3: a round trip is two wake-ups; event %.0f us against " \
      "a blocking read's\n    %.0f us (12 wineserver requests per " \
      "wake-up against 5); sleep1 sleeps 1 ms,\n    which lasts about " \
      "1.3 ms under Wine and 15.6 ms on Windows.\n", e, b
}
{
  if ($2 == "s1" && $5 == "wall_s") val[$1, "s1", $3] = $7
  if ($2 == "s3" && $5 == "parked_cpu_ms_per_s") val[$1, "s3", $3] = ($6 < 0 ? 0 : $6)
  if ($2 == "s4-pipe" && $5 == "p50_us") val[$1, "s4", $3] = $6
  seen[$1] = 1
}
END {
  n = split("blocking event set aset spawn sleep1 yield", st, " ")
  printf "\nWhat anypoll changes, measured just now side by side (medians):\n"
  printf "%-44s", ""
  for (i = 1; i <= n; i++) printf "%9s", st[i]
  printf "\n"
  np = split("linux wine", plats, " ")
  rows["s1"] = "1 CPU, producer + relay: time x blocking"
  rows["s3"] = "idle wait, 64 handles: CPU ms per second"
  rows["s4"] = "ping-pong over pipes: round trip, us"
  order[1] = "s1"; order[2] = "s3"; order[3] = "s4"
  for (k = 1; k <= np; k++) {
    p = plats[k]
    if (!(p in seen)) continue
    print (p == "linux" ? "Linux (native)" : "Windows build under Wine")
    for (r = 1; r <= 3; r++) {
      printf "  %-42s", rows[order[r]]
      for (i = 1; i <= n; i++) printf "%s", cell(p, order[r] SUBSEP st[i])
      printf "\n"
    }
    read_figures(p)
  }
  print ""
  print "blocking = a plain blocking read, no poll at all: the physical limit."
  print "event    = anypoll_poll (on Windows: helper threads parked in the kernel)."
  print "set      = anypoll_set_wait on a watch set registered once, outside the timing."
  print "aset     = the same set on pipes made with anypoll_pipe (Windows: overlapped"
  print "           read ends, read with anypoll_read, no helper thread); row 1 only."
  print "spawn    = aset with the producer started by anypoll_spawn (its stdout the"
  print "           data pipe): the seed's scenario, row 1 only."
  print "sleep1   = check everything, sleep 1 ms, repeat (git/gnulib poll today)."
  print "yield    = check everything, yield, repeat (a busy wait; git before 2014)."
  print "sleep1 costs a millisecond per wake-up and burns CPU while idle; yield"
  print "burns a whole CPU. event idles nearly like blocking everywhere and wakes"
  print "like it on Linux; under Wine each of its wake-ups on a pipe costs 12"
  print "wineserver requests against a blocking read's 5 (bench/requests), which"
  print "shows in the first and last rows. Full runs and explanations: make bench,"
  print "docs/performance.md."
}
