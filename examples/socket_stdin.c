/* SPDX-License-Identifier: MIT */
/* Wait on a socket and on stdin at once: the shape of every interactive
 * network client. Lines typed on stdin go to a TCP server; what the server
 * sends back is printed. To keep the example self-contained, the server
 * (which answers each line in upper case) runs in this same process, on a
 * loopback connection, and is one more entry in the same poll set.
 *
 *   echo hello | socket_stdin      prints HELLO */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* sockets, read under -std=c11 */
#endif
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "anypoll.h"

#ifdef _WIN32
#  include <io.h>
#  include <winsock2.h>
#  include <ws2tcpip.h>
#  define read_fd _read
#  define SHUT_WR SD_SEND
typedef SOCKET socket_t;
/* anypoll_poll takes C runtime descriptors; a SOCKET becomes one this way. */
static int poll_fd(SOCKET s) { return _open_osfhandle((intptr_t)s, 0); }
#else
#  include <arpa/inet.h>
#  include <netinet/in.h>
#  include <sys/socket.h>
#  include <unistd.h>
#  define read_fd read
#  define closesocket close
typedef int socket_t;
static int poll_fd(int s) { return s; }
#endif

/* A connected loopback TCP pair: *client and *server. Returns 0 or -1. */
static int loopback_pair(socket_t *client, socket_t *server) {
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  socket_t listener = socket(AF_INET, SOCK_STREAM, 0);
  if (bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr *)&addr, &len) != 0)
    return -1;
  *client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(*client, (struct sockaddr *)&addr, sizeof addr) != 0)
    return -1;
  *server = accept(listener, NULL, NULL);
  closesocket(listener);
  return 0;
}

int main(void) {
#ifdef _WIN32
  WSADATA wsa;
  WSAStartup(MAKEWORD(2, 2), &wsa);
#endif
  socket_t client, server;
  if (loopback_pair(&client, &server) != 0) {
    fprintf(stderr, "cannot set up the loopback connection\n");
    return 1;
  }

  enum { STDIN, CLIENT, SERVER };
  struct pollfd fds[3] = { { 0 } };
  fds[STDIN].fd = 0;
  fds[CLIENT].fd = poll_fd(client);
  fds[SERVER].fd = poll_fd(server);
  for (int i = 0; i < 3; i++)
    fds[i].events = POLLIN;

  char buf[512];
  for (;;) {
    if (anypoll_poll(fds, 3, -1) < 0) {
      perror("anypoll_poll");
      return 1;
    }
    if (fds[STDIN].revents != 0) {
      int n = (int)read_fd(0, buf, sizeof buf);
      if (n > 0) {
        send(client, buf, n, 0);
      } else {
        /* End of input: tell the server, and stop watching stdin (a
         * negative fd is ignored). */
        shutdown(client, SHUT_WR);
        fds[STDIN].fd = -1;
      }
    }
    if (fds[SERVER].revents != 0) {
      int n = (int)recv(server, buf, sizeof buf, 0);
      for (int i = 0; i < n; i++)
        buf[i] = (char)toupper((unsigned char)buf[i]);
      if (n > 0)
        send(server, buf, n, 0);
      else { /* the client is done: so is the server */
        shutdown(server, SHUT_WR);
        fds[SERVER].fd = -1;
      }
    }
    if (fds[CLIENT].revents != 0) {
      int n = (int)recv(client, buf, sizeof buf, 0);
      if (n <= 0)
        break; /* the server has answered everything and hung up */
      fwrite(buf, 1, (size_t)n, stdout);
      fflush(stdout);
    }
  }
  closesocket(client);
  closesocket(server);
  return 0;
}
