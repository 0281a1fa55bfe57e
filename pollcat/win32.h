/* SPDX-License-Identifier: MIT */
/* What pollcat's Windows layer (win32.c) shares with its sockets
 * (win32_sock.c): the record of the last failure that pc_error and
 * pc_error_text read. */
#ifndef POLLCAT_WIN32_H
#define POLLCAT_WIN32_H

#include <winsock2.h>
#include <windows.h>

/* Records a Win32 (kind 0) or Winsock (1) failure; 2 is a Winsock
 * would-block outside connect (PCE_AGAIN). */
void pc_win_set_last(DWORD code, int kind);
/* Record WSAGetLastError() and return -1; the _io one for a read, write or
 * accept, whose would-block means "try again", not "in progress". */
int pc_win_fail_wsa(void);
int pc_win_fail_wsa_io(void);

#endif
