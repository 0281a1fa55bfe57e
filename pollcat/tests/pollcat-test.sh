#!/bin/bash
# pollcat's behavioural tests: pollcat-test.sh CASE, run by CTest natively
# and for the Windows build (which starts pollcat.exe through Wine itself).
# Environment (set by pollcat/CMakeLists.txt):
#   PC_RUNNER  empty natively; "tools/wine-run PREFIX" for the Windows build
#   PC_BIN     the folder holding pollcat and pccat
#   PC_EXE     ".exe" for the Windows build
#   PC_TMP     scratch space (one folder per case, removed on success)
# Exit status 0 pass, 1 fail, 77 skipped (CTest reports it as skipped).
set -u
case_name=$1
read -r -a RUN <<<"${PC_RUNNER:-}"
PC="$PC_BIN/pollcat${PC_EXE:-}"
CAT="$PC_BIN/pccat${PC_EXE:-}"
WIN=0
[ -n "${PC_EXE:-}" ] && WIN=1
T="$PC_TMP/$case_name"
rm -rf "$T"
mkdir -p "$T"
cd "$T" || exit 1

fail() {
  echo "FAIL ($case_name): $*" >&2
  for f in *.err; do
    [ -f "$f" ] && { echo "--- $f:" >&2; head -c 2000 "$f" >&2; }
  done
  kill $(jobs -p) 2>/dev/null
  exit 1
}
note() { echo "$case_name: $*"; }

pc() { "${RUN[@]}" "$PC" "$@"; }

# pcp ARGS: pollcat with its stdin a pipe. Natively the caller's pipe is
# used as is. A Windows program started by Wine from a shell gets a Unix
# pipe that Wine's Windows pipe API does not handle (see docs/pollcat.md),
# so under Wine pollcat runs as the child of another pollcat, whose exec
# mode gives it real Windows anonymous pipes, as a Windows parent would.
pcp() {
  if [ $WIN = 1 ]; then pc exec -- "$PC" "$@"; else pc "$@"; fi
}

# Sizes: 100 MB in every mode, natively and under Wine. Measured on the
# shared 2-core machine (load average 5-6 from other builds): natively
# bulk_net 1.2 s and bulk_exec 7.9 s; under Wine bulk_net 15.7 s and
# bulk_exec 31.8 s (each case's note prints its own time). PC_NET_MB and
# PC_EXEC_MB override the sizes for experiments.
MB=1000000
NET_SIZE=$((${PC_NET_MB:-100} * MB))
EXEC_SIZE=$((${PC_EXEC_MB:-100} * MB))

# wait_line FILE REGEX: waits (up to 60 s) for a line of FILE to match.
wait_line() {
  for _ in $(seq 600); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "no line matching '$2' in $1"
}

# start_listener NAME ARGS... (stdin/stdout redirected by the caller):
# starts "pollcat -v listen 127.0.0.1 0" in the background with stderr in
# NAME.err; sets PORT and PID.
# A listener is started in the background with 2>l.err, and its shell
# truncates l.err only once it runs: each start is preceded by ': >l.err',
# or listen_port could read the port of the previous listener from the old
# file (seen: pollcat.dual_stack connecting to the port of the one before).
listen_port() {
  wait_line "$1" 'listening on .* port [0-9]+'
  PORT=$(sed -n 's/.*listening on .* port \([0-9][0-9]*\).*/\1/p' "$1" | head -1)
}

sum() { sha256sum <"$1" | cut -d' ' -f1; }

expect_status() { # WHAT EXPECTED ACTUAL
  [ "$3" = "$2" ] || fail "$1: exit status $3, expected $2"
}

case $case_name in

bulk_net)
  head -c $NET_SIZE /dev/urandom >a
  head -c $NET_SIZE /dev/urandom >b
  start=$(date +%s.%N)
  : >l.err
  pc -v listen 127.0.0.1 0 <a >a.out 2>l.err &
  lpid=$!
  listen_port l.err
  if [ $WIN = 1 ]; then
    pcp connect 127.0.0.1 "$PORT" <b >b.out 2>c.err
  else
    cat b | pcp connect 127.0.0.1 "$PORT" >b.out 2>c.err
  fi
  cs=$?
  wait $lpid
  ls=$?
  end=$(date +%s.%N)
  expect_status connect 0 $cs
  expect_status listen 0 $ls
  # The listener's stdin went to the connect side's stdout and back.
  [ "$(stat -c %s b.out)" = $NET_SIZE ] || fail "connect side got $(stat -c %s b.out) bytes"
  [ "$(stat -c %s a.out)" = $NET_SIZE ] || fail "listen side got $(stat -c %s a.out) bytes"
  [ "$(sum a)" = "$(sum b.out)" ] || fail "listen->connect data differs"
  [ "$(sum b)" = "$(sum a.out)" ] || fail "connect->listen data differs"
  note "$NET_SIZE bytes each way at once, checksums equal, $(awk "BEGIN{printf \"%.1f\", $end - $start}") s"
  ;;

bulk_exec)
  head -c $EXEC_SIZE /dev/urandom >a
  # stdin a file; the child copies it to both stdout and stderr.
  start=$(date +%s.%N)
  pc exec -- "$CAT" --both <a >o 2>e
  expect_status "exec --both" 0 $?
  [ "$(sum a)" = "$(sum o)" ] || fail "child stdout differs ($(stat -c %s o) bytes)"
  [ "$(sum a)" = "$(sum e)" ] || fail "child stderr differs ($(stat -c %s e) bytes)"
  # stdin a pipe.
  if [ $WIN = 1 ]; then
    pcp exec -- "$CAT" <a >o2 2>e2.err
  else
    cat a | pc exec -- "$CAT" >o2 2>e2.err
  fi
  expect_status "exec from a pipe" 0 $?
  [ "$(sum a)" = "$(sum o2)" ] || fail "child stdout differs (stdin a pipe)"
  end=$(date +%s.%N)
  # The child's exit status is passed through.
  pc exec -- "$CAT" --exit 42 </dev/null >/dev/null 2>x.err
  expect_status "child exit 42" 42 $?
  note "$EXEC_SIZE bytes to stdout and stderr, then through a pipe, $(awk "BEGIN{printf \"%.1f\", $end - $start}") s"
  ;;

dual_stack)
  [ -r /proc/net/if_inet6 ] && grep -q '^0\{31\}1 ' /proc/net/if_inet6 ||
    { echo "no IPv6 loopback: skipped"; exit 77; }
  printf 'over IPv6\n' >m6
  printf 'over IPv4\n' >m4
  for target in ::1 127.0.0.1; do
    # No address: the dual-stack wildcard takes both families.
    : >l.err
    pc -v listen 0 </dev/null >got 2>l.err &
    lpid=$!
    listen_port l.err
    grep -q 'listening on :: port' l.err || fail "not on the IPv6 wildcard: $(cat l.err)"
    m=m6
    [ $target = 127.0.0.1 ] && m=m4
    pc connect $target "$PORT" <$m >/dev/null 2>c.err
    expect_status "connect $target" 0 $?
    wait $lpid
    expect_status "listen (for $target)" 0 $?
    cmp -s got $m || fail "listener got '$(cat got)' from $target"
  done
  # An explicit IPv6 address.
  : >l.err
  pc -v listen ::1 0 </dev/null >got 2>l.err &
  lpid=$!
  listen_port l.err
  pc connect ::1 "$PORT" <m6 >/dev/null 2>c.err
  expect_status "connect ::1 to listen ::1" 0 $?
  wait $lpid
  cmp -s got m6 || fail "listen ::1 got '$(cat got)'"
  note "IPv6 and IPv4 clients of the dual-stack listener, and listen ::1"
  ;;

half_close)
  # pollcat listen's stdin ends at once; the far side (bash's /dev/tcp)
  # reads until it sees end of input, and only then sends its reply.
  head -c 300000 /dev/urandom >request
  head -c 2000000 /dev/urandom >reply
  : >l.err
  pc -v listen 127.0.0.1 0 <request >reply.out 2>l.err &
  lpid=$!
  listen_port l.err
  exec 3<>"/dev/tcp/127.0.0.1/$PORT" || fail "cannot connect"
  cat <&3 >request.got # returns only at end of input
  cat reply >&3
  exec 3>&-
  wait $lpid
  expect_status listen 0 $?
  cmp -s request request.got || fail "far side got $(stat -c %s request.got) of $(stat -c %s request) bytes before EOF"
  cmp -s reply reply.out || fail "reply: $(stat -c %s reply.out) of $(stat -c %s reply) bytes arrived"
  grep -q 'stdin: end of input, shutting down sending' l.err || fail "no shutdown reported"
  note "far side saw EOF after 300000 bytes; the 2000000-byte reply arrived in full"
  ;;

stdin_kinds)
  printf 'line one\nline two\n' >msg
  run_one() { # KIND
    : >l.err
    pc -v listen 127.0.0.1 0 </dev/null >got 2>l.err &
    lpid=$!
    listen_port l.err
    case $1 in
    file) pc connect 127.0.0.1 "$PORT" <msg >/dev/null 2>c.err ;;
    pipe)
      if [ $WIN = 1 ]; then
        pcp connect 127.0.0.1 "$PORT" <msg >/dev/null 2>c.err
      else
        cat msg | pc connect 127.0.0.1 "$PORT" >/dev/null 2>c.err
      fi ;;
    esac
    expect_status "stdin a $1" 0 $?
    wait $lpid
    cmp -s got msg || fail "stdin a $1: far side got '$(cat got)'"
  }
  run_one file
  run_one pipe
  # A console: under script(1) stdin is a terminal natively, and a Windows
  # console (Wine's, on the terminal) for the Windows build.
  command -v script >/dev/null || fail "script(1) is missing"
  : >l.err
  pc -v listen 127.0.0.1 0 </dev/null >got 2>l.err &
  lpid=$!
  listen_port l.err
  if [ $WIN = 0 ]; then
    # script sends the terminal's end-of-file character when its input
    # ends: pollcat must see end of input and finish with status 0.
    printf 'typed line\n' |
      timeout 60 script -qec "$PC -v connect 127.0.0.1 $PORT 2>$T/t.err; echo \$? >$T/t.status" /dev/null >/dev/null
    expect_status "stdin a terminal" 0 "$(cat t.status)"
    wait $lpid
    [ "$(cat got)" = "typed line" ] || fail "terminal: far side got '$(cat got)'"
    note "file, pipe and terminal stdin relayed; terminal EOF ended the relay"
  else
    # Wine's console on a terminal takes Enter as CR, delivers lines as
    # CRLF, and has no end-of-file key (neither ^D nor ^Z ends input), so
    # the relay is ended by -w: that it ends at all shows pollcat waits on
    # the console with anypoll rather than blocking in a read.
    {
      wait_line l.err 'connection from'
      sleep 1
      printf 'typed line\r'
      sleep 6
    } | timeout 60 script -qec "${RUN[*]} $PC -v --stats -w 3 connect 127.0.0.1 $PORT 2>$T/t.err; echo \$? >$T/t.status" /dev/null >/dev/null
    expect_status "console stdin, ended by -w" 7 "$(cat t.status)"
    grep -q 'timed out: idle for 3 seconds' t.err || fail "no idle timeout message"
    wait $lpid
    [ "$(od -An -c got | tr -s ' ')" = " t y p e d l i n e \r \n" ] ||
      fail "console: far side got '$(od -An -c got)'"
    note "file, pipe and console stdin relayed; $(grep stats: t.err)"
  fi
  ;;

idle_cpu | idle_cpu_control)
  # Relays that sit idle for 2.5 s (4 s under Wine), waiting on a pipe (stdin) and a socket,
  # and on three pipes (exec); each reports its own CPU time with --stats.
  # The control runs the same with the yield backend (a busy wait) and
  # must exceed the bound, which shows that the check can fail.
  backend=()
  [ $case_name = idle_cpu_control ] && backend=(--backend yield)
  # Starting a Windows program under Wine takes a second or more of the
  # idle period when the machine is busy: the relay itself must still
  # have sat idle for at least 2 s.
  idle=2.5
  [ $WIN = 1 ] && idle=4
  : >l.err
  pc -v listen 127.0.0.1 0 </dev/null >/dev/null 2>l.err &
  lpid=$!
  listen_port l.err
  if [ $WIN = 1 ]; then
    sleep $idle | pcp --stats "${backend[@]}" connect 127.0.0.1 "$PORT" >/dev/null 2>c.err
    sleep $idle | pcp --stats "${backend[@]}" exec -- "$CAT" >/dev/null 2>x.err
  else
    sleep $idle | pc --stats "${backend[@]}" connect 127.0.0.1 "$PORT" >/dev/null 2>c.err
    sleep $idle | pc --stats "${backend[@]}" exec -- "$CAT" >/dev/null 2>x.err
  fi
  wait $lpid
  for f in c.err x.err; do
    line=$(grep 'stats: cpu' $f) || fail "no stats in $f"
    cpu=$(echo "$line" | sed 's/.*cpu \([0-9.]*\) ms.*/\1/')
    wall=$(echo "$line" | sed 's/.*wall \([0-9.]*\) ms.*/\1/')
    # The bound: 5% of one CPU over the idle time.
    over=$(awk "BEGIN{print ($cpu > 0.05 * $wall) ? 1 : 0}")
    [ "$(awk "BEGIN{print ($wall >= 2000) ? 1 : 0}")" = 1 ] || fail "$f: relay lasted only $wall ms"
    if [ $case_name = idle_cpu ]; then
      [ "$over" = 0 ] || fail "$f: idle relay used $cpu ms CPU in $wall ms"
    else
      [ "$over" = 1 ] || fail "$f: busy-wait control used only $cpu ms CPU in $wall ms"
    fi
    note "$f: $cpu ms CPU in $wall ms"
  done
  ;;

exec_args)
  # Arguments reach the child unchanged: on Windows, pollcat builds the
  # child's command line and the child's C runtime splits it again.
  args=("two words" 'a"quote' 'trailing\' 'back\slash' 'bs\"q' '' '\\"' "tab	x" '*')
  pc exec -- "$CAT" --args "${args[@]}" </dev/null >got 2>x.err
  expect_status "exec --args" 0 $?
  printf '[%s]\n' "${args[@]}" >want
  if [ $WIN = 1 ]; then tr -d '\r' <got >got.lf; else cp got got.lf; fi
  cmp -s want got.lf || fail "child got: $(cat got.lf)"
  note "${#args[@]} awkward arguments arrived unchanged"
  ;;

options)
  # The far side keeps its stdin open (and so never closes) for 8 s, the
  # lifetime of its "sleep 8"; the listener is stopped once done with.
  # (Process substitution: the shell does not wait for the sleeps, and
  # their stderr is not CTest's, so CTest does not either.)
  # -q: our stdin ends at once; quit after 1 s idle, with status 0.
  : >l.err
  pc -v listen 127.0.0.1 0 < <(sleep 8 2>/dev/null) >/dev/null 2>l.err &
  lpid=$!
  listen_port l.err
  start=$(date +%s%N)
  pc -q 1 connect 127.0.0.1 "$PORT" </dev/null >/dev/null 2>c.err
  expect_status "-q 1" 0 $?
  ms=$((($(date +%s%N) - start) / 1000000))
  [ $ms -ge 1000 ] || fail "-q 1 quit after $ms ms"
  kill $lpid 2>/dev/null
  wait $lpid
  # -w: a connection idle in both directions times out with status 7.
  : >l.err
  pc -v listen 127.0.0.1 0 < <(sleep 8 2>/dev/null) >/dev/null 2>l.err &
  lpid=$!
  listen_port l.err
  pc -w 1 connect 127.0.0.1 "$PORT" < <(sleep 6 2>/dev/null) >/dev/null 2>c.err
  expect_status "-w 1 idle" 7 $?
  grep -qx 'pollcat: timed out: idle for 1 seconds' c.err || fail "-w message: $(cat c.err)"
  kill $lpid 2>/dev/null
  wait $lpid
  pc --version >v 2>x.err
  expect_status --version 0 $?
  grep -qE '^pollcat [0-9]+\.[0-9]+\.[0-9]+ \(anypoll [0-9.]+\)' v || fail "--version: $(cat v)"
  pc --help >h 2>x.err
  expect_status --help 0 $?
  grep -q '^usage: pollcat' h || fail "--help: $(head -1 h)"
  note "-q quit after $ms ms idle; -w gave 7; --version: $(tr -d '\r' <v)"
  ;;

errors)
  # check WHAT STATUS REGEX CMD...: runs pollcat with stdin from /dev/null
  # (unless redirected by the caller), checks status and the one line.
  check() {
    local what=$1 want=$2 re=$3
    shift 3
    timeout 60 "${RUN[@]}" "$PC" "$@" </dev/null >out 2>err.txt
    local got=$?
    [ "$got" = "$want" ] || fail "$what: status $got (expected $want); stderr: $(cat err.txt)"
    [ "$(wc -l <err.txt)" = 1 ] || fail "$what: not one line: $(cat err.txt)"
    grep -qE "^pollcat: $re" err.txt || fail "$what: message '$(cat err.txt)' does not match '$re'"
    note "$what -> $got: $(cat err.txt)"
  }
  check "unknown host" 4 "unknown host 'nosuch\.invalid'" connect nosuch.invalid 80
  check "bad port (range)" 3 "bad port '99999'" connect 127.0.0.1 99999
  check "bad port (text)" 3 "bad port 'http'" connect 127.0.0.1 http
  check "bad port (listen)" 3 "bad port '65536'" listen 127.0.0.1 65536
  check "missing command" 2 "exec: missing command" exec --
  check "command not found" 127 "exec /nonexistent/cmd: command not found" exec -- /nonexistent/cmd
  check "unknown option" 2 "unknown option '-x'" -x connect 127.0.0.1 1
  check "missing mode" 2 "missing mode" -v
  check "bad -w" 2 "-w needs a number" -w abc connect 127.0.0.1 1
  # A port nobody listens on: one that a listener just used and closed.
  : >l.err
  pc -v listen 127.0.0.1 0 </dev/null >/dev/null 2>l.err &
  lpid=$!
  listen_port l.err
  closed=$PORT
  pc connect 127.0.0.1 "$closed" </dev/null >/dev/null 2>c.err
  wait $lpid
  check "connection refused" 5 "connect to 127\.0\.0\.1 port $closed: connection refused" connect 127.0.0.1 "$closed"
  # Address in use: a second listener on a live listener's port.
  : >l.err
  pc -v listen 127.0.0.1 0 </dev/null >/dev/null 2>l.err &
  lpid=$!
  listen_port l.err
  check "address in use" 6 "listen on 127\.0\.0\.1 port $PORT: address in use" listen 127.0.0.1 "$PORT"
  pc connect 127.0.0.1 "$PORT" </dev/null >/dev/null 2>c.err
  wait $lpid
  # -w bounds the wait for a connection.
  check "accept timeout" 7 "timed out waiting for a connection" -w 0.5 listen 127.0.0.1 0
  # The reader of stdout goes away: a clean stop, status 8.
  head -c 20000000 /dev/zero >zeros
  timeout 60 "${RUN[@]}" "$PC" exec -- "$CAT" <zeros 2>err.txt | head -c 1000 >/dev/null
  st=${PIPESTATUS[0]}
  expect_status "stdout reader gone" 8 "$st"
  grep -qx 'pollcat: stdout: reader went away (broken pipe)' err.txt ||
    fail "stdout reader gone: '$(cat err.txt)'"
  note "stdout reader gone -> 8: $(cat err.txt)"
  # The child stops reading its stdin: not an error, its status is ours.
  timeout 60 "${RUN[@]}" "$PC" exec -- "$CAT" --no-read --exit 3 <zeros >/dev/null 2>err.txt
  expect_status "child not reading" 3 $?
  [ ! -s err.txt ] || fail "child not reading: '$(cat err.txt)'"
  note "child that does not read its stdin -> its status 3, no message"
  ;;

*)
  fail "unknown case"
  ;;
esac
cd / && rm -rf "$T"
exit 0
