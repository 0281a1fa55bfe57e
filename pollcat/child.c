/* SPDX-License-Identifier: MIT */
/* pollcat's children: exec mode, and the session that serves one
 * connection with a command of its own (-e) or, with -k alone, stdout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Starts argv with a pipe for each standard stream. anypoll_spawn does
 * the PATH search, gives no other child our ends of the pipes, starts the
 * child with default signal actions (SIGPIPE included, as from a shell),
 * and on Windows makes our ends overlapped, so that anypoll_poll waits on
 * them with no thread and a write to a child that stops reading never
 * blocks (pc_child_io says how each end is used). 0, or the exit status
 * for the failure (said). */
int start_child(char **argv, struct pc_io io[3], struct pc_child *child) {
  const int stdio[3] = { ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE,
                         ANYPOLL_STDIO_PIPE };
  int pipes[3];
  if (anypoll_spawn(argv[0], argv, NULL, stdio, pipes, &child->proc) == 0) {
    for (int i = 0; i < 3; i++)
      pc_child_io(i, pipes[i], &io[i]);
    return 0;
  }
  int e = errno;
  if (e == ENOENT) {
    say("exec %s: command not found", argv[0]);
    return PC_EXIT_NOCMD;
  }
  /* EINVAL: Windows, what the command line cannot carry intact (a double
   * quote in the command's name; '"', '%' or '!' in an argument of a
   * batch file, which cmd.exe would split or expand: anypoll_spawn(3)). */
  if (e == EINVAL)
    say("exec %s: the command or an argument cannot be passed to it intact",
        argv[0]);
  else
    say("exec %s: %s", argv[0], strerror(e));
  /* As a shell says it: found, but it cannot be run as asked. */
  return e == EACCES || e == ENOEXEC || e == EISDIR || e == E2BIG ||
                 e == EINVAL
             ? PC_EXIT_NOEXEC
             : PC_EXIT_IO;
}

/* Waits for the child to exit and returns its status (anypoll_proc_wait's:
 * 128 + N for a POSIX child ended by signal N), or -1 with errno; its
 * process descriptor is closed either way. */
static int child_wait(struct pc_child *child) {
  int status, r;
  while ((r = anypoll_proc_wait(child->proc, &status)) != 0 && errno == EINTR)
    ;
  int e = errno;
  anypoll_close(child->proc);
  child->proc = -1;
  errno = e;
  return r == 0 ? status : -1;
}

static struct pc_io std_out, std_err;

void sessions_setup(void) {
  pc_std_io(1, &std_out);
  pc_std_io(2, &std_err);
}

/* 0, or -1 when the connection could not be served (said; sock closed,
 * or with -k alone the status to exit with is returned by session_end). */
int session_start(struct session *c, pc_sock sock, const char *who) {
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "connection");
  if (opt.keep)
    snprintf(c->label, sizeof c->label, "client %s: ", who);
  c->r.label = c->label;
  if (pc_sock_io(sock, &c->net) != 0) {
    say("%scannot use the connection: %s", c->label, pc_error_text());
    pc_sock_close(sock);
    return -1;
  }
  struct relay *r = &c->r;
  if (opt.cmd != NULL) {
    int rc = start_child(opt.cmd, c->child_io, &c->child);
    if (rc != 0) {
      pc_sock_io_close(&c->net);
      if (!opt.keep)
        finish(rc);
      return -1;
    }
    c->has_child = 1;
    VERBOSE("%sstarted %s", c->label, opt.cmd[0]);
    r->n = 3;
    r->input = 0;
    r->until = UNTIL_OUTPUT_DONE;
    stream_init(&r->s[0], c->name, &c->net, "child stdin", &c->child_io[0],
                &stats.bytes[0]);
    r->s[0].shut_dst = 1;
    r->s[0].quiet_broken = 1;
    stream_init(&r->s[1], "child stdout", &c->child_io[1], c->name, &c->net,
                &stats.bytes[1]);
    r->s[1].shut_dst = 1;
    stream_init(&r->s[2], "child stderr", &c->child_io[2], "stderr", &std_err,
                &stats.bytes[2]);
    r->s[2].fatal_broken = 1;
  } else {
    /* -k alone: each client's data to stdout; stdin is not read (it could
     * go to one client only), and our sending side stays open until the
     * client closes. */
    r->n = 1;
    r->input = -1;
    r->until = UNTIL_ALL_DONE;
    stream_init(&r->s[0], c->name, &c->net, "stdout", &std_out,
                &stats.bytes[1]);
    r->s[0].fatal_broken = 1;
  }
  r->last_activity = pc_now_ms();
  return 0;
}

/* Closes what the session holds and returns its status: the failure's,
 * else the child's (-e), else 0. */
int session_end(struct session *c) {
  int status = c->r.failed;
  for (int i = 0; i < c->r.n; i++)
    free(c->r.s[i].mem);
  pc_sock_io_close(&c->net);
  if (c->has_child) {
    for (int i = 0; i < 3; i++)
      pc_close(&c->child_io[i]);
    /* Its output has ended (or the relay failed and its pipes are closed
     * now), so it is exiting. */
    int child_status = child_wait(&c->child);
    if (child_status < 0) {
      say("%swaiting for %s failed: %s", c->label, opt.cmd[0],
          strerror(errno));
      child_status = PC_EXIT_IO;
    }
    VERBOSE("%s%s exited with status %d", c->label, opt.cmd[0], child_status);
    if (status == 0)
      status = child_status;
  }
  VERBOSE("%sdone, status %d", c->label, status);
  return status;
}

/* -e without -k: one connection served by the command; pollcat's status
 * is the command's (or the relay's failure). */
void serve_one(pc_sock sock) {
  sessions_setup();
  static struct session c;
  if (session_start(&c, sock, "") != 0)
    finish(PC_EXIT_NET);
  relay_start();
  relay_run(&c.r);
  finish(session_end(&c));
}

void mode_exec(char **argv) {
  static struct pc_io in, out, err, child_io[3];
  struct pc_child child;
  int rc = start_child(argv, child_io, &child);
  if (rc != 0)
    exit(rc);
  VERBOSE("started %s", argv[0]);
  pc_std_io(0, &in);
  pc_std_io(1, &out);
  pc_std_io(2, &err);
  struct relay r;
  memset(&r, 0, sizeof r);
  r.label = "";
  r.n = 3;
  r.input = 0;
  stream_init(&r.s[0], "stdin", &in, "child stdin", &child_io[0],
              &stats.bytes[0]);
  r.s[0].shut_dst = 1;
  r.s[0].quiet_broken = 1;
  stream_init(&r.s[1], "child stdout", &child_io[1], "stdout", &out,
              &stats.bytes[1]);
  r.s[1].fatal_broken = 1;
  stream_init(&r.s[2], "child stderr", &child_io[2], "stderr", &err,
              &stats.bytes[2]);
  r.s[2].fatal_broken = 1;
  if (in.fd < 0)
    pc_shut(&child_io[0]);
  relay_start();
  r.until = UNTIL_OUTPUT_DONE;
  relay_run(&r);
  /* The child's output has ended; what is left is to collect its status
   * (it may still be running, with its output closed). */
  int status = child_wait(&child);
  if (status < 0) {
    say("waiting for %s failed: %s", argv[0], strerror(errno));
    finish(PC_EXIT_IO);
  }
  VERBOSE("%s exited with status %d", argv[0], status);
  finish(status);
}

