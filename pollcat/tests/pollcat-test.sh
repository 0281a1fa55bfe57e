#!/bin/bash
# SPDX-License-Identifier: MIT
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
  # A background "pc ..." is a subshell running pollcat as its child:
  # stop the children too, or a listener outlives the failed case.
  for j in $(jobs -p); do
    pkill -P "$j" 2>/dev/null
    kill "$j" 2>/dev/null
  done
  exit 1
}
note() { echo "$case_name: $*"; }

pc() { "${RUN[@]}" "$PC" "$@"; }

# pcp ARGS: pollcat with its stdin a pipe. Natively the caller's pipe is
# used as is. A Windows program started by Wine from a shell gets a Unix
# pipe that Wine's Windows pipe API does not handle (see docs/pollcat.md),
# so under Wine pollcat is started by pccat --relay, which gives it real
# Windows anonymous pipes (CreatePipe) for stdin and stdout, as a Windows
# parent would, and copies them with blocking threads. (pollcat's own exec
# mode gives its child anypoll_spawn's pipes, named pipes, which is not
# what most Windows parents give.)
pcp() {
  if [ $WIN = 1 ]; then "${RUN[@]}" "$CAT" --relay "$PC" "$@"; else pc "$@"; fi
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

# listen_port LOG: waits until the listener logging -v to LOG listens, and
# sets PORT.
listen_port() {
  wait_line "$1" 'listening on .* port [0-9]+'
  PORT=$(sed -n 's/.*listening on .* port \([0-9][0-9]*\).*/\1/p' "$1" | head -1)
}

# start_listener LOG ARGS...: starts "pollcat -v ARGS" in the background
# (stdin /dev/null, stdout in got, stderr in LOG) and waits until it
# listens; sets PORT and lpid. A log reused for the next listener is
# removed first: the background shell truncates it only when it gets to
# run, and until then the last listener's port could be read.
start_listener() {
  local log=$1
  shift
  rm -f "$log"
  pc -v "$@" </dev/null >got 2>"$log" &
  lpid=$!
  listen_port "$log"
}

# start_peer PORTFILE MODE ARGS...: peer.py MODE in the background, its
# port in PORTFILE and its stderr in PORTFILE.err; sets PORT and ppid.
start_peer() {
  local portfile=$1
  shift
  rm -f "$portfile" "$portfile.got"
  python3 "$(dirname "$0")/peer.py" "$1" "$portfile" "${@:2}" 2>"$portfile.err" &
  ppid=$!
  wait_line "$portfile" '^[0-9]+$'
  PORT=$(cat "$portfile")
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
  rm -f l.err
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
    rm -f l.err
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
  # -4: the IPv4 wildcard only; -6: the IPv6 wildcard, IPv6 only (an IPv4
  # client is refused).
  # (A log file per listener: a reused one could still show the last
  # listener's port when the next is started in the background.)
  start_listener l4.err -4 listen 0
  grep -q 'listening on 0\.0\.0\.0 port' l4.err || fail "-4: $(cat l4.err)"
  pc connect 127.0.0.1 "$PORT" <m4 >/dev/null 2>c.err
  expect_status "connect 127.0.0.1 to -4" 0 $?
  wait $lpid
  cmp -s got m4 || fail "-4 listener got '$(cat got)'"
  start_listener l6.err -6 listen 0
  grep -q 'listening on :: port' l6.err || fail "-6: $(cat l6.err)"
  pc connect 127.0.0.1 "$PORT" <m4 >/dev/null 2>c.err
  expect_status "IPv4 client of -6 listen" 5 $?
  pc -6 connect ::1 "$PORT" <m6 >/dev/null 2>c.err
  expect_status "-6 connect ::1 to -6 listen" 0 $?
  wait $lpid
  cmp -s got m6 || fail "-6 listener got '$(cat got)'"
  # An explicit IPv6 address.
  rm -f l.err
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
  rm -f l.err
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
    rm -f l.err
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
  rm -f l.err
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
  rm -f l.err
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
  if [ $WIN = 1 ]; then
    # A batch file runs through cmd.exe, whose own parsing must not run a
    # second command: an argument with blanks or operators arrives whole
    # (in the double quotes that %~1 removes); one with a double quote,
    # which cmd.exe would split whatever the quoting, is refused with 126
    # before anything runs. (pollcat before anypoll_spawn passed it, and
    # cmd.exe ran "echo INJECTED".)
    printf '@echo [%%1] [%%2]\r\n' >args.bat
    pc exec -- ./args.bat 'a&echo INJECTED' 'b c' </dev/null >got 2>x.err
    expect_status "exec a batch file" 0 $?
    [ "$(tr -d '\r' <got)" = '["a&echo INJECTED"] ["b c"]' ] || fail "batch file got: $(cat got)"
    pc exec -- ./args.bat 'x"&echo INJECTED' </dev/null >got 2>x.err
    st=$?
    grep -q INJECTED got && fail "cmd.exe ran a second command: $(cat got)"
    expect_status "batch file, an argument with a double quote" 126 $st
    grep -qx 'pollcat: exec \./args\.bat: the command or an argument cannot be passed to it intact' x.err ||
      fail "batch file refused: '$(cat x.err)'"
    note "batch file: operators passed whole, a double quote refused (126)"
  fi
  ;;

options)
  # The far side keeps its stdin open (and so never closes) for 8 s, the
  # lifetime of its "sleep 8"; the listener is stopped once done with.
  # (Process substitution: the shell does not wait for the sleeps, and
  # their stderr is not CTest's, so CTest does not either.)
  # -q: our stdin ends at once; quit after 1 s idle, with status 0.
  rm -f l.err
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
  rm -f l.err
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
  for o in -k -e -4 -6 '-q 0' -q -w -v --stats; do
    grep -qF -- "$o " h || fail "--help does not name $o"
  done
  note "-q quit after $ms ms idle; -w gave 7; --version: $(tr -d '\r' <v)"
  ;;

errors)
  # check WHAT STATUS REGEX CMD...: runs pollcat with stdin from /dev/null
  # (unless redirected by the caller), checks status and the one line.
  check() {
    local what=$1 want=$2 re=$3
    shift 3
    timeout 60 "${RUN[@]}" "$PC" "$@" <"${CHECK_IN:-/dev/null}" >out 2>err.txt
    local got=$?
    [ "$got" = "$want" ] || fail "$what: status $got (expected $want); stderr: $(cat err.txt)"
    [ "$(wc -l <err.txt)" = 1 ] || fail "$what: not one line: $(cat err.txt)"
    grep -qE "^pollcat: $re" err.txt || fail "$what: message '$(cat err.txt)' does not match '$re'"
    note "$what -> $got: $(cat err.txt)"
  }
  # Messages end in a word: no ". " left from Windows' texts.
  check "unknown host" 4 "unknown host 'nosuch\.invalid': [A-Za-z][^.]*[a-z]\$" connect nosuch.invalid 80
  check "-4 with an IPv6 address" 4 "unknown host '::1': Address family for hostname not supported\$" -4 connect ::1 80
  check "-6 with an IPv4 address" 4 "unknown host '127\.0\.0\.1': Address family for hostname not supported\$" -6 connect 127.0.0.1 80
  # An address that is not ours: words, not "error 10049".
  check "address not ours" 9 "listen on 192\.0\.2\.1 port 9000: Cannot assign requested address\$" listen 192.0.2.1 9000
  check "-k with connect" 2 "-k goes with listen" -k connect 127.0.0.1 1
  check "bad port (range)" 3 "bad port '99999'" connect 127.0.0.1 99999
  check "bad port (text)" 3 "bad port 'http'" connect 127.0.0.1 http
  check "bad port (listen)" 3 "bad port '65536'" listen 127.0.0.1 65536
  check "missing command" 2 "exec: missing command" exec --
  check "command not found" 127 "exec /nonexistent/cmd: command not found" exec -- /nonexistent/cmd
  check "unknown option" 2 "unknown option '-x'" -x connect 127.0.0.1 1
  check "missing mode" 2 "missing mode" -v
  check "bad -w" 2 "-w needs a number" -w abc connect 127.0.0.1 1
  # A port nobody listens on: one that a listener just used and closed.
  rm -f l.err
  pc -v listen 127.0.0.1 0 </dev/null >/dev/null 2>l.err &
  lpid=$!
  listen_port l.err
  closed=$PORT
  pc connect 127.0.0.1 "$closed" </dev/null >/dev/null 2>c.err
  wait $lpid
  check "connection refused" 5 "connect to 127\.0\.0\.1 port $closed: connection refused" connect 127.0.0.1 "$closed"
  # Address in use: a second listener on a live listener's port.
  rm -f l.err
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
  # A local failure: stdin a directory, whose read fails (natively EISDIR;
  # under Wine ReadFile on the directory Wine opened says "Invalid
  # function"): status 10.
  rm -f l.err
  pc -v listen 127.0.0.1 0 </dev/null >/dev/null 2>l.err &
  lpid=$!
  listen_port l.err
  CHECK_IN=. check "stdin a directory" 10 "stdin: read failed: [A-Za-z][^.]*[a-z]\$" connect 127.0.0.1 "$PORT"
  wait $lpid
  # A command that exists but cannot be run: 126. Natively a file without
  # execute permission; on Windows a file that is not a program, which
  # anypoll_spawn reports as EACCES, worded as natively.
  if [ $WIN = 1 ]; then
    printf 'not a program\n' >notexe.exe
    check "command not runnable" 126 "exec \./notexe\.exe: Permission denied\$" exec -- ./notexe.exe
  else
    printf '#!/bin/sh\n' >noexec
    chmod 644 noexec
    check "command not runnable" 126 "exec \./noexec: Permission denied\$" exec -- ./noexec
  fi
  # The child's own status once it ran; a POSIX child killed by signal N
  # gives 128 + N (Windows has no signals: no such case there).
  timeout 60 "${RUN[@]}" "$PC" exec -- "$CAT" --exit 77 </dev/null >/dev/null 2>err.txt
  expect_status "child status 77" 77 $?
  if [ $WIN = 0 ]; then
    timeout 60 "$PC" exec -- sh -c 'kill -9 $$' </dev/null >/dev/null 2>err.txt
    expect_status "child killed by SIGKILL" 137 $?
    note "child killed by signal 9 -> 137"
  fi
  # The reader of stderr goes away (the child writes to both): 8 as well
  # (the message has nowhere to go).
  timeout 60 "${RUN[@]}" "$PC" exec -- "$CAT" --both <zeros 2>&1 >/dev/null | head -c 1000 >/dev/null
  st=${PIPESTATUS[0]}
  expect_status "stderr reader gone" 8 "$st"
  note "stderr reader gone -> 8"
  # The child stops reading its stdin: not an error, its status is ours.
  timeout 60 "${RUN[@]}" "$PC" exec -- "$CAT" --no-read --exit 3 <zeros >/dev/null 2>err.txt
  expect_status "child not reading" 3 $?
  [ ! -s err.txt ] || fail "child not reading: '$(cat err.txt)'"
  note "child that does not read its stdin -> its status 3, no message"
  # A child that lives 2 s without reading its stdin while pollcat has
  # data for it: pollcat waits in anypoll_poll for the pipe to take more
  # (POLLOUT) or the child to go, with no timer. A relay that retried its
  # writes on a timer (the Windows build's PIPE_NOWAIT pipe before
  # anypoll_spawn: 1-16 ms, about 125 polls in 2 s) fails the bound.
  timeout 60 "${RUN[@]}" "$PC" --stats exec -- "$CAT" --no-read --sleep 2000 --exit 4 <zeros >/dev/null 2>err.txt
  expect_status "child not reading for 2 s" 4 $?
  line=$(grep 'stats: polls' err.txt) || fail "no counts in err.txt: $(cat err.txt)"
  polls=$(echo "$line" | sed 's/.*polls \([0-9]*\),.*/\1/')
  [ "$polls" -le 20 ] || fail "$polls polls while the child did not read: $line"
  note "child not reading for 2 s: $polls polls ($line)"
  ;;

closed_std)
  # pollcat started without a standard stream. Natively the shell's <&-,
  # >&- and 2>&- close the descriptor; pccat --closed does the same and
  # execs pollcat, and for the Windows build starts pollcat.exe with no
  # such standard handle, as a Windows parent does. (Under Wine a shell's
  # <&- reaches the program as whatever Wine itself opened on that
  # descriptor, its current directory or its wineserver socket: see
  # docs/pollcat.md.)
  command -v python3 >/dev/null || fail "python3 is missing (scripts/setup-deps)"
  without() { # LIST ARGS...: pollcat without the standard streams in LIST
    local list=$1
    shift
    timeout 60 "${RUN[@]}" "$CAT" --closed "$list" "$PC" "$@"
  }
  # greet_peer: a far side that greets, reads to the end of input (what it
  # read in port.got), then replies with 1000 bytes; sets PORT and ppid.
  greet_peer() { start_peer port greet 1000; }
  { printf 'hello from peer\n'; head -c 1000 /dev/zero | tr '\0' b; } >want
  # 1. stdin closed: an empty input. pollcat half-closes at once, the far
  # side reads 0 bytes and replies. (The old build: the socket took
  # descriptor 0 and the greeting went back to the far side as stdin: a
  # hang. A Windows process without a standard handle keeps its C runtime
  # descriptor, so the old build passed this part under Wine.)
  ways=(pccat)
  [ $WIN = 0 ] && ways+=(shell)
  for way in "${ways[@]}"; do
    greet_peer
    if [ $way = shell ]; then
      timeout 60 "$PC" -v connect 127.0.0.1 "$PORT" <&- >got 2>c.err
    else
      without 0 -v connect 127.0.0.1 "$PORT" >got 2>c.err
    fi
    expect_status "stdin closed ($way)" 0 $?
    wait $ppid
    expect_status "far side (stdin closed, $way)" 0 $?
    [ -f port.got ] && [ ! -s port.got ] || fail "stdin closed ($way): far side read $(stat -c %s port.got 2>/dev/null) bytes"
    cmp -s want got || fail "stdin closed ($way): got $(stat -c %s got) bytes, not the greeting and the reply"
  done
  # 2. stdout closed where the data would go: status 10 and one line,
  # before pollcat listens, connects or starts a child. (The old build
  # listened, on both platforms, and would have failed only after a
  # client came.)
  msg='pollcat: stdout is closed: nowhere to write the data (>/dev/null discards it)'
  for args in "-v listen 127.0.0.1 0" "connect 127.0.0.1 1" "exec -- $CAT"; do
    # shellcheck disable=SC2086
    without 1 $args </dev/null 2>c.err
    expect_status "stdout closed: $args" 10 $?
    [ "$(cat c.err)" = "$msg" ] || fail "stdout closed: $args: '$(cat c.err)'"
  done
  if [ $WIN = 0 ]; then
    timeout 60 "$PC" -v listen 127.0.0.1 0 </dev/null >&- 2>c.err
    expect_status "stdout closed (shell)" 10 $?
    [ "$(cat c.err)" = "$msg" ] || fail "stdout closed (shell): '$(cat c.err)'"
  fi
  # With -e stdout is not used: the child answers the far side.
  printf 'ping\n' >ping
  rm -f l.err
  pc -v listen 127.0.0.1 0 <ping >got 2>l.err &
  lpid=$!
  listen_port l.err
  without 1 -e "$CAT --exit 5" connect 127.0.0.1 "$PORT" </dev/null 2>e.err
  expect_status "stdout closed, -e" 5 $?
  wait $lpid
  cmp -s ping got || fail "stdout closed, -e: far side got '$(cat got)'"
  # 3. stderr closed: messages (-v) and the child's stderr are discarded,
  # and nothing else changes. (The old build, natively: the socket took
  # descriptor 2 and the far side got pollcat's messages as data.)
  printf 'request\n' >req
  greet_peer
  without 2 -v connect 127.0.0.1 "$PORT" <req >got
  expect_status "stderr closed" 0 $?
  wait $ppid
  cmp -s req port.got || fail "stderr closed: far side read '$(head -c 300 port.got)'"
  cmp -s want got || fail "stderr closed: got $(stat -c %s got) bytes"
  # exec: 4 MB to the child's stderr too, more than its pipe holds, so a
  # relay that kept the child's stderr unread would stall. (The old build
  # under Wine: a hang.)
  head -c 4000000 /dev/urandom >a
  without 2 exec -- "$CAT" --both <a >o
  expect_status "stderr closed, exec" 0 $?
  cmp -s a o || fail "stderr closed, exec: stdout got $(stat -c %s o) bytes"
  if [ $WIN = 0 ]; then
    greet_peer
    timeout 60 "$PC" -v connect 127.0.0.1 "$PORT" <req >got 2>&-
    expect_status "stderr closed (shell)" 0 $?
    wait $ppid
    cmp -s req port.got || fail "stderr closed (shell): far side read '$(head -c 300 port.got)'"
  fi
  note "stdin closed: empty input, reply read; stdout closed: 10 before any connection; stderr closed: messages and child stderr discarded"
  ;;

reset)
  # The peer resets the connection mid-transfer: pollcat must say so and
  # exit 9, never 0 (under Wine, recv returns 0 after a reset; poll says
  # POLLERR|POLLHUP). First while pollcat receives: the peer sends 4 MB,
  # pauses, sends 4 MB more and closes with SO_LINGER 0, discarding what
  # it still holds.
  command -v python3 >/dev/null || fail "python3 is missing (scripts/setup-deps)"
  head -c 30000000 /dev/zero >big
  # Then while pollcat sends: the peer reads 1 MB and is killed (SIGKILL)
  # with more unread, so its kernel resets the connection.
  for run in "receiving send-reset 4000000 /dev/null" \
             "sending read-kill 1000000 big"; do
    read -r what mode bytes input <<<"$run"
    start_peer "port.$what" "$mode" "$bytes"
    pc connect 127.0.0.1 "$PORT" <"$input" >"got.$what" 2>"c.$what.err"
    st=$?
    wait $ppid
    expect_status "$what, peer reset" 9 $st
    grep -qx 'pollcat: connection: connection reset by peer' "c.$what.err" ||
      fail "$what: message '$(cat "c.$what.err")'"
    note "$what: reset after $(stat -c %s "got.$what") bytes received -> 9: $(cat "c.$what.err")"
  done
  ;;

keep)
  # -k -e: one listener serves three clients at once, each with a child of
  # its own (pccat --exit 3, an echo); bash's /dev/tcp are the clients.
  # (exec: $! is pollcat itself, or the Wine process that runs it, so that
  # the kill at the end stops it; a -k listener never ends by itself.)
  ( exec "${RUN[@]}" "$PC" -v -k -e "$CAT --exit 3" listen 127.0.0.1 0 ) </dev/null >/dev/null 2>l.err &
  lpid=$!
  listen_port l.err
  exec 3<>"/dev/tcp/127.0.0.1/$PORT" || fail "client A cannot connect"
  exec 4<>"/dev/tcp/127.0.0.1/$PORT" || fail "client B cannot connect"
  exec 5<>"/dev/tcp/127.0.0.1/$PORT" || fail "client C cannot connect"
  # All three are connected; each gets its own echo, in any order.
  printf 'from C\n' >&5
  printf 'from A\n' >&3
  printf 'from B\n' >&4
  read -r -t 60 c <&5 || fail "client C: no echo"
  read -r -t 60 b <&4 || fail "client B: no echo"
  read -r -t 60 a <&3 || fail "client A: no echo"
  [ "$a|$b|$c" = "from A|from B|from C" ] || fail "echoes: '$a|$b|$c'"
  # B and C leave; A is still served, by the same child as before.
  exec 4>&- 5>&-
  printf 'A again\n' >&3
  read -r -t 60 a <&3 || fail "client A: no second echo"
  [ "$a" = "A again" ] || fail "client A's second echo: '$a'"
  exec 3>&-
  for _ in $(seq 600); do
    [ "$(grep -c 'done, status 3$' l.err)" = 3 ] && break
    sleep 0.1
  done
  [ "$(grep -c 'started' l.err)" = 3 ] || fail "not three children: $(cat l.err)"
  [ "$(grep -c 'done, status 3$' l.err)" = 3 ] || fail "not three clients done: $(cat l.err)"
  kill -0 $lpid 2>/dev/null || fail "the -k listener did not keep listening"
  # -k alone: two clients at once, each one's data to stdout.
  ( exec "${RUN[@]}" "$PC" -v -k listen 127.0.0.1 0 ) </dev/null >k.out 2>k.err &
  kpid=$!
  listen_port k.err
  exec 3<>"/dev/tcp/127.0.0.1/$PORT" || fail "client 1 cannot connect"
  exec 4<>"/dev/tcp/127.0.0.1/$PORT" || fail "client 2 cannot connect"
  printf 'one\n' >&3
  printf 'two\n' >&4
  exec 3>&- 4>&-
  for _ in $(seq 600); do
    [ "$(grep -c ': done, status 0$' k.err)" = 2 ] && break
    sleep 0.1
  done
  [ "$(sort k.out | tr '\n' ' ')" = "one two " ] || fail "-k stdout: '$(cat k.out)'"
  # -e with connect: the child talks to the far side; its status is ours.
  printf 'ping\n' >msg
  pc -v listen 127.0.0.1 0 <msg >got 2>l2.err &
  l2pid=$!
  listen_port l2.err
  pc -e "$CAT --exit 5" connect 127.0.0.1 "$PORT" </dev/null >/dev/null 2>e.err
  expect_status "-e connect" 5 $?
  wait $l2pid
  expect_status "listener for -e" 0 $?
  cmp -s msg got || fail "-e: far side got back '$(cat got)'"
  kill $lpid $kpid 2>/dev/null
  wait $lpid $kpid 2>/dev/null
  note "-k -e served 3 clients at once (3 children, status 3 each); -k took 2 clients' data; -e connect -> child status 5"
  # Usage: -k goes with listen only, -e not with exec.
  "${RUN[@]}" "$PC" -k connect 127.0.0.1 1 </dev/null >/dev/null 2>u.err
  expect_status "-k connect" 2 $?
  "${RUN[@]}" "$PC" -e "$CAT" exec -- "$CAT" </dev/null >/dev/null 2>u.err
  expect_status "-e exec" 2 $?
  ;;

quit_zero)
  # -q 0 as nc -q 0: stdin ends at once (half-close), and the reply, sent
  # 0.5 s after the far side saw the end of input, arrives in full.
  command -v python3 >/dev/null || fail "python3 is missing (scripts/setup-deps)"
  printf 'GET / HTTP/1.0\r\n\r\n' >req
  start_peer port reply-after-eof 2000000 0.5
  pc -q 0 connect 127.0.0.1 "$PORT" <req >got 2>c.err
  expect_status "-q 0" 0 $?
  wait $ppid
  [ "$(stat -c %s got)" = 2000000 ] || fail "-q 0: $(stat -c %s got) of 2000000 bytes of the reply"
  grep -qx 'peer: request of 18 bytes' port.err || fail "far side: $(cat port.err)"
  note "-q 0: request sent, end of input seen, 2000000-byte reply read in full"
  ;;

interop_socat | interop_ncat)
  # pollcat against a real socat or ncat peer (scripts/setup-deps installs
  # them): both directions at once, each way as client and as server,
  # half-close, and a reset mid-transfer.
  tool=${case_name#interop_}
  command -v $tool >/dev/null || { echo "$tool is not installed: skipped"; exit 77; }
  head -c 3000000 /dev/urandom >q
  head -c 2000000 /dev/urandom >r
  free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
  # tool_listen PORT: the tool as server on its stdio, always run in the
  # background (exec: $! is the tool itself); socat waits up to 60 s (not
  # 0.5) for the other direction after one has ended.
  tool_listen() {
    case $tool in
    socat) exec socat -t 60 "TCP-LISTEN:$1,bind=127.0.0.1,reuseaddr" STDIO ;;
    ncat) exec ncat -l 127.0.0.1 "$1" ;;
    esac
  }
  tool_connect() {
    case $tool in
    socat) socat -t 60 STDIO "TCP:127.0.0.1:$1" ;;
    ncat) ncat 127.0.0.1 "$1" ;;
    esac
  }
  # pc_connect_retry PORT ARGS...: until the tool listens (refused: 5).
  pc_connect_retry() {
    local port=$1 st
    shift
    for _ in $(seq 100); do
      pc "$@" connect 127.0.0.1 "$port" <"$IN" >"$OUT" 2>c.err
      st=$?
      [ $st = 5 ] || return $st
      sleep 0.1
    done
    return $st
  }
  # 1. pollcat connects to the tool; both send at once, both half-close.
  P=$(free_port)
  tool_listen $P <r >t.got 2>t.err &
  tpid=$!
  IN=q OUT=p.got pc_connect_retry $P
  expect_status "pollcat connect to $tool" 0 $?
  wait $tpid
  expect_status "$tool listen" 0 $?
  cmp -s q t.got || fail "$tool got $(stat -c %s t.got) of 3000000 bytes from pollcat"
  cmp -s r p.got || fail "pollcat got $(stat -c %s p.got) of 2000000 bytes from $tool"
  # 2. The tool connects to pollcat listen.
  rm -f l.err
  pc -v listen 127.0.0.1 0 <q >p.got 2>l.err &
  lpid=$!
  listen_port l.err
  tool_connect $PORT <r >t.got 2>t.err
  expect_status "$tool connect to pollcat" 0 $?
  wait $lpid
  expect_status "pollcat listen for $tool" 0 $?
  cmp -s q t.got || fail "$tool got $(stat -c %s t.got) of 3000000 bytes from pollcat listen"
  cmp -s r p.got || fail "pollcat listen got $(stat -c %s p.got) of 2000000 bytes from $tool"
  # 3. Half-close: pollcat's stdin is empty (it shuts down at once) and
  # the tool's data still arrives in full; then the other way round.
  # ncat ends the whole connection when it reads the end of input from
  # the network (it sent 8 KiB of 2 MB here, then closed), so only socat
  # can show the first half.
  if [ $tool = socat ]; then
    P=$(free_port)
    tool_listen $P <r >t.got 2>t.err &
    tpid=$!
    IN=/dev/null OUT=p.got pc_connect_retry $P
    expect_status "half-close, pollcat sends nothing" 0 $?
    wait $tpid
    [ ! -s t.got ] || fail "$tool got data from an empty stdin"
    cmp -s r p.got || fail "half-close: pollcat got $(stat -c %s p.got) of 2000000 bytes"
  fi
  P=$(free_port)
  tool_listen $P </dev/null >t.got 2>t.err &
  tpid=$!
  IN=q OUT=p.got pc_connect_retry $P
  expect_status "half-close, $tool sends nothing" 0 $?
  wait $tpid
  cmp -s q t.got || fail "half-close: $tool got $(stat -c %s t.got) of 3000000 bytes"
  # 4. Reset: the tool stops reading (its stdout is a pipe nobody reads)
  # and is killed with data unread, so its kernel resets the connection
  # while pollcat is still sending.
  head -c 50000000 /dev/zero >big
  P=$(free_port)
  mkfifo stall
  sleep 60 <stall >/dev/null 2>&1 &
  spid=$!
  tool_listen $P </dev/null >stall 2>t.err &
  tpid=$!
  IN=big OUT=/dev/null
  ( sleep 2; kill -9 $tpid ) &
  killer=$!
  pc_connect_retry $P -v
  st=$?
  wait $killer
  kill $spid 2>/dev/null
  expect_status "$tool killed mid-transfer" 9 $st
  grep -qx 'pollcat: connection: connection reset by peer' c.err ||
    fail "reset: message '$(grep -v '^pollcat: connect' c.err)'"
  note "$tool: both directions both ways, half-close both ways, reset mid-transfer -> 9"
  ;;

write_sizes)
  # Bulk-sized writes: a listener relaying 20 MiB to a pipe made
  # one 4 KiB write per poll round before (5,120 writes, 5,122 polls
  # natively). Counted with --stats: the writes to stdout must average at
  # least 8 KiB (a pipe holds 64 KiB, so about 320 is the usual count).
  # Under Wine the old build already wrote 64 KiB to stdout: this case
  # shows the Linux change.
  head -c 20971520 /dev/urandom >a
  rm -f l.err
  pc -v --stats listen 127.0.0.1 0 </dev/null 2>l.err | cat >a.out &
  lpid=$!
  listen_port l.err
  pc connect 127.0.0.1 "$PORT" <a >/dev/null 2>c.err
  expect_status connect 0 $?
  wait $lpid
  cmp -s a a.out || fail "the listener's stdout got $(stat -c %s a.out) of 20971520 bytes"
  line=$(grep 'stats: polls' l.err) || fail "no counts in l.err"
  writes=$(echo "$line" | sed 's/.*, writes [0-9]* \([0-9]*\) .*/\1/')
  [ "$writes" -ge 1 ] && [ "$writes" -le 2560 ] ||
    fail "$writes writes to stdout for 20 MiB: $line"
  note "20 MiB to a pipe in $writes writes ($line)"
  ;;

*)
  fail "unknown case"
  ;;
esac
cd / && rm -rf "$T"
exit 0
