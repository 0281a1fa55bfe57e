# SPDX-License-Identifier: MIT
# Markdown tables of bench/run's results.csv, one per scenario, for
# docs/performance.md:  awk -F, -f bench/tables.awk build/bench/results.csv
# -v only=s1 (s2, s3, s4, s5, s6, setwait, setwake, setmem): that
# scenario's table alone, without its heading, as docs/performance.md embeds
# it (bench/doc-tables rewrites the embedded tables from a results.csv).
function f(v, d) { return v == "" ? "-" : sprintf("%." d "f", v) }
function x(v) { return v == "" ? "" : sprintf(" (%.2fx)", v) }
{
  key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
  if ($2 == "s5-ready") ready[$3] = 1
  V[key] = $6; R[key] = $7
  if (!(($1, $2, $3) in seenS)) { seenS[$1, $2, $3] = 1; S[$1, $2, ++ns[$1, $2]] = $3 }
  if (!(($1, $2, $4) in seenN)) { seenN[$1, $2, $4] = 1; N[$1, $2, ++nn[$1, $2]] = $4 }
}
function g(p, s, st, n, m) { return V[p, s, st, n, m] }
function r(p, s, st, n, m) { return R[p, s, st, n, m] }
# want(S, TITLE): whether scenario S is printed; prints its heading if so.
function want(s, title) {
  if (only != "" && only != s) return 0
  if (only == "") print "\n#### " title "\n"
  return 1
}
function relay(s, title,   k, p, i, st, n) {
  if (!want(s, title)) return
  print "| platform | strategy | wall s | x blocking | x sleep1 | relay CPU s/GB | x blocking | wineserver CPU s/GB | reads |"
  print "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  for (k = 1; k <= 2; k++) {
    p = k == 1 ? "linux" : "wine"
    for (i = 1; i <= ns[p, s]; i++) {
      st = S[p, s, i]; n = N[p, s, 1]
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", p, st, f(g(p, s, st, n, "wall_s"), 3),
        f(r(p, s, st, n, "wall_s"), 2), f(g(p, s, st, n, "wall_x_sleep1"), 2), f(g(p, s, st, n, "cpu_s_per_gb"), 2),
        f(r(p, s, st, n, "cpu_s_per_gb"), 2), f(g(p, s, st, n, "server_cpu_s_per_gb"), 2),
        f(g(p, s, st, n, "reads"), 0)
    }
  }
}
END {
  relay("s1", "Scenario 1: one CPU, producer and relay")
  relay("s2", "Scenario 2: two CPUs, CPU spent per GB relayed")
  if (want("s3", "Scenario 3: idle wait on 64 handles (32 pipes, 31 sockets and a terminal; with no terminal, 32 sockets)")) {
  print "| platform | strategy | terminal | CPU ms/s, whole wait | CPU ms/s, parked | enter + leave, CPU ms | wineserver ms/s, parked |"
  print "|---|---|---|---:|---:|---:|---:|"
  for (k = 1; k <= 2; k++) {
    p = k == 1 ? "linux" : "wine"; s = "s3"
    for (i = 1; i <= ns[p, s]; i++) {
      st = S[p, s, i]; n = N[p, s, 1]
      tm = g(p, s, st, n, "terminals")
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", p, st, tm == "" ? "-" : (tm == 1 ? (p == "linux" ? "pty" : "console") : "none"), f(g(p, s, st, n, "cpu_ms_per_s"), 3),
        f(g(p, s, st, n, "parked_cpu_ms_per_s"), 3), f(g(p, s, st, n, "enter_leave_cpu_ms"), 2),
        f(g(p, s, st, n, "server_parked_ms_per_s"), 3)
    }
  }
  }
  if (want("s4", "Scenario 4: one-byte ping-pong between two processes")) {
  print "| platform | transport | strategy | round trips/s | round trip x blocking | p50 us | p99 us |"
  print "|---|---|---|---:|---:|---:|---:|"
  for (k = 1; k <= 2; k++) for (t = 1; t <= 2; t++) {
    p = k == 1 ? "linux" : "wine"; s = t == 1 ? "s4-pipe" : "s4-tcp"
    for (i = 1; i <= ns[p, s]; i++) {
      st = S[p, s, i]
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", p, substr(s, 4), st, f(g(p, s, st, 1, "round_trips_per_s"), 0),
        f(r(p, s, st, 1, "round_trips_per_s"), 2), f(g(p, s, st, 1, "p50_us"), 1), f(g(p, s, st, 1, "p99_us"), 1)
    }
  }
  }
  if (want("s5", "Scenario 5: ready fast path and N idle + 1 active pipes")) {
    # One row per platform and N, one column per strategy (in order of
    # appearance over both platforms).
    nst = 0
    for (k = 1; k <= 2; k++) {
      p = k == 1 ? "linux" : "wine"
      for (i = 1; i <= ns[p, "s5-active"]; i++)
        if (!(S[p, "s5-active", i] in seenst)) { seenst[S[p, "s5-active", i]] = 1; ST[++nst] = S[p, "s5-active", i] }
    }
    for (t = 1; t <= 2; t++) {
      if (t == 1) print "N idle + 1 active: round trips per second (x blocking)\n"
      else print "\nAll ready: microseconds per call per descriptor (a call on N pipes that all hold data)\n"
      hdr = "| platform | N |"; sep = "|---|---:|"
      # The all-ready table has no column for a strategy it did not measure.
      for (i = 1; i <= nst; i++) if (t == 1 || (ST[i] in ready)) { hdr = hdr " " ST[i] " |"; sep = sep "---:|" }
      print hdr; print sep
      for (k = 1; k <= 2; k++) {
        p = k == 1 ? "linux" : "wine"
        for (j = 1; j <= nn[p, "s5-active"]; j++) {
          n = N[p, "s5-active", j]
          d = ""
          for (i = 1; i <= nst; i++) if (V[p, "s5-active", ST[i], n, "distinct_fds"] != "") d = V[p, "s5-active", ST[i], n, "distinct_fds"]
          row = "| " p " | " (d == "" ? n : n " (" d " distinct)") " |"
          for (i = 1; i <= nst; i++) {
            st = ST[i]
            if (t == 2 && !(st in ready)) continue
            if (V[p, "s5-active", st, n, "open_failed_at"] != "") cell = "table full at " V[p, "s5-active", st, n, "open_failed_at"]
            else if (t == 1) {
              ac = g(p, "s5-active", st, n, "round_trips_per_s")
              cell = ((p, "s5-active", st, n, "failed") in V) ? "FAILED" : ac == "" ? "-" : f(ac, ac < 100 ? 1 : 0) " (" f(r(p, "s5-active", st, n, "round_trips_per_s"), 2) ")"
            } else {
              rc = g(p, "s5-ready", st, n, "calls_per_s")
              cell = ((p, "s5-ready", st, n, "failed") in V) ? "FAILED" : rc == "" ? "-" : sprintf("%.3f", 1e6 / rc / n)
            }
            row = row " " cell " |"
          }
          print row
        }
      }
    }
  }
  relay("s6", "Scenario 6: data always ready (the seed's fast local case)")
  if (want("setwait", "The watch set against raw epoll (Linux, one CPU)")) {
    print "| registered idle pipes per set | epoll rt us | set rt us | set / epoll |"
    print "|---:|---:|---:|---:|"
    for (j = 1; j <= nn["linux", "setwait"]; j++) {
      n = N["linux", "setwait", j]
      printf "| %s | %s | %s | %s |\n", n, f(g("linux", "setwait", "epoll", n, "roundtrip_us"), 2),
        f(g("linux", "setwait", "set", n, "roundtrip_us"), 2), f(r("linux", "setwait", "set", n, "roundtrip_us"), 3)
    }
  }
  if (want("setwake", "Time per woken wait on a set of N idle pipes + 1")) {
    print "| platform | pipes | N | blocking rt us | set rt us | rt x block | wait x block (est.) | x set-1 | registered in (first round trip) |"
    print "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    for (k = 1; k <= 2; k++) for (t = 1; t <= 3; t++) {
      p = k == 1 ? "linux" : "wine"
      s = t == 1 ? "setwake-sync" : t == 2 ? "setwake-anypoll" : "setwake-sync-inherit"
      kind = t == 1 ? "`pipe()`/`_pipe()`" : t == 2 ? "`anypoll_pipe`" : "inheritable `_pipe()`"
      for (j = 1; j <= nn[p, s]; j++) {
        n = N[p, s, j]
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s s (%s s) |\n", p, kind, n,
          f(g(p, s, "blocking", n, "roundtrip_us"), 2), f(g(p, s, "set", n, "roundtrip_us"), 2),
          f(r(p, s, "set", n, "roundtrip_us"), 3), f(g(p, s, "set", n, "wait_x_block"), 3),
          f(g(p, s, "set", n, "x_set_first_n"), 3), f(g(p, s, "set", n, "register_s"), 3),
          f(g(p, s, "set", n, "first_roundtrip_s"), 3)
      }
    }
  }
  if (want("setmem", "Memory and threads per registration")) {
    print "| platform | kind | N | threads per registration | KiB per registration | committed KiB per registration (walk) | register N |"
    print "|---|---|---:|---:|---:|---:|---:|"
    for (k = 1; k <= 2; k++) for (t = 1; t <= 4; t++) {
      p = k == 1 ? "linux" : "wine"
      kind = t == 1 ? "sync" : t == 2 ? "anypoll" : t == 3 ? "socket" : "console"
      s = "setmem-" kind
      for (j = 1; j <= nn[p, s]; j++) {
        n = N[p, s, j]
        printf "| %s | %s | %s | %s | %s | %s | %s s |\n", p, kind, n,
          f(g(p, s, "set", n, "threads_per_registration"), 3), f(g(p, s, "set", n, "kib_per_registration"), 2),
          f(g(p, s, "set", n, "walk_kib_per_registration"), 2), f(g(p, s, "set", n, "register_s"), 3)
      }
    }
  }
}
