# The table `make demo` prints, from bench/run's results.csv
# (platform,scenario,strategy,param,metric,value,ratio,reps).
function cell(p, key,   v) {
  v = val[p, key]
  if (v == "") return sprintf("%9s", "-")
  if (v + 0 >= 100) return sprintf("%9.0f", v)
  return sprintf("%9.2f", v)
}
{
  if ($2 == "s1" && $5 == "wall_s") val[$1, "s1", $3] = $7
  if ($2 == "s3" && $5 == "parked_cpu_ms_per_s") val[$1, "s3", $3] = ($6 < 0 ? 0 : $6)
  if ($2 == "s4-pipe" && $5 == "p50_us") val[$1, "s4", $3] = $6
  seen[$1] = 1
}
END {
  n = split("blocking event sleep1 yield", st, " ")
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
  }
  print ""
  print "blocking = a plain blocking read, no poll at all: the physical limit."
  print "event    = anypoll_poll (on Windows: helper threads parked in the kernel)."
  print "sleep1   = check everything, sleep 1 ms, repeat (git/gnulib poll today)."
  print "yield    = check everything, yield, repeat (a busy wait; git before 2014)."
  print "sleep1 costs a millisecond per wake-up and burns CPU while idle; yield"
  print "burns a whole CPU. event idles nearly like blocking everywhere and wakes"
  print "like it on Linux; under Wine each of its wake-ups on a pipe costs 12"
  print "wineserver requests against a blocking read's 5 (bench/requests), which"
  print "shows in the first and last rows. Full runs and explanations: make bench,"
  print "docs/performance.md."
}
