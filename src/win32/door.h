/* SPDX-License-Identifier: MIT */
/* The door to a caller's handle (syscall.c, syscall_crt.c): every Windows
 * call on a handle the library does not own, each announced to the lock
 * model. Included by win.h only. */
#ifndef ANYPOLL_DOOR_H
#define ANYPOLL_DOOR_H

/* ---- The door to a caller's handle (syscall.c) ---------------------------
 * Every Windows call on a handle the library does not own. Each announces
 * itself to the lock model; none takes the gate (the callers do). */
ANYPOLL__INTERNAL
intptr_t anypoll__sys_os_handle(int fd);
ANYPOLL__INTERNAL
ACCESS_MASK anypoll__sys_handle_access(HANDLE h, int *sole);
ANYPOLL__INTERNAL
int anypoll__sys_compare_objects(HANDLE a, HANDLE b);
/* HANDLE_FLAG_INHERIT of the handle (0 when it cannot be asked). */
ANYPOLL__INTERNAL
int anypoll__sys_handle_inheritable(HANDLE h);
/* FilePipeLocalInformation; 1 if it answered, which only a pipe does. */
ANYPOLL__INTERNAL
int anypoll__sys_pipe_local_info(HANDLE h, anypoll__pipe_local_info *info);
ANYPOLL__INTERNAL
NTSTATUS anypoll__sys_mode_information(HANDLE h, ULONG *mode);
ANYPOLL__INTERNAL
int anypoll__sys_socket_type(HANDLE h, int *type, int *error);
ANYPOLL__INTERNAL
DWORD anypoll__sys_file_type(HANDLE h, DWORD *error);
/* 1: console input, 0: console output, -1: not a console. */
ANYPOLL__INTERNAL
int anypoll__sys_console_kind(HANDLE h);
ANYPOLL__INTERNAL
BOOL anypoll__sys_peek_named_pipe(HANDLE h, DWORD *avail, DWORD *error);
ANYPOLL__INTERNAL
NTSTATUS anypoll__sys_pipe_peek(HANDLE h, anypoll__pipe_peek_head *head);
ANYPOLL__INTERNAL
BOOL anypoll__sys_read_zero(HANDLE h, DWORD *error);
ANYPOLL__INTERNAL
BOOL anypoll__sys_read_zero_overlapped(HANDLE h, OVERLAPPED *ov,
                                       DWORD *error);
ANYPOLL__INTERNAL
BOOL anypoll__sys_recv_zero_overlapped(HANDLE s, OVERLAPPED *ov,
                                       DWORD *error);
ANYPOLL__INTERNAL
BOOL anypoll__sys_cancel_io(HANDLE h, OVERLAPPED *ov);
ANYPOLL__INTERNAL
BOOL anypoll__sys_duplicate(HANDLE h, HANDLE *out);
ANYPOLL__INTERNAL
BOOL anypoll__sys_console_mode(HANDLE h, DWORD *mode);
ANYPOLL__INTERNAL
BOOL anypoll__sys_console_count(HANDLE h, DWORD *count);
ANYPOLL__INTERNAL
BOOL anypoll__sys_console_peek(HANDLE h, INPUT_RECORD *r, DWORD n, DWORD *got);
ANYPOLL__INTERNAL
BOOL anypoll__sys_console_read(HANDLE h, INPUT_RECORD *r, DWORD n, DWORD *got);
ANYPOLL__INTERNAL
BOOL anypoll__sys_console_wait(HANDLE *wait, HANDLE h, WAITORTIMERCALLBACK fn,
                               void *ctx);
ANYPOLL__INTERNAL
int anypoll__sys_socket_ioctl_handle(HANDLE s, DWORD code, const char *call,
                                     SOCKET *out, int *error);
ANYPOLL__INTERNAL
int anypoll__sys_socket_name(HANDLE s, int *error);
ANYPOLL__INTERNAL
int anypoll__sys_socket_connected(HANDLE s);
ANYPOLL__INTERNAL
long anypoll__sys_socket_unread(HANDLE s);
/* The program's own reads and writes (rw.c): an overlapped request, its
 * result once complete, and the C runtime's _read/_write. */
ANYPOLL__INTERNAL
BOOL anypoll__sys_read_overlapped(HANDLE h, void *buf, DWORD len,
                                  OVERLAPPED *ov, DWORD *error);
ANYPOLL__INTERNAL
BOOL anypoll__sys_write_overlapped(HANDLE h, const void *buf, DWORD len,
                                   OVERLAPPED *ov, DWORD *error);
ANYPOLL__INTERNAL
BOOL anypoll__sys_overlapped_result(HANDLE h, OVERLAPPED *ov, DWORD *n,
                                    DWORD *error);
ANYPOLL__INTERNAL
int anypoll__sys_crt_read(int fd, HANDLE h, void *buf, unsigned len);
ANYPOLL__INTERNAL
int anypoll__sys_crt_write(int fd, HANDLE h, const void *buf, unsigned len);
ANYPOLL__INTERNAL
DWORD anypoll__sys_close_socket_fd(int fd, HANDLE h);
ANYPOLL__INTERNAL
int anypoll__sys_crt_close(int fd);
/* anypoll_pipe's read ends (set_anypipe.c): the object's name, and the
 * association with a set's port. */
ANYPOLL__INTERNAL
int anypoll__sys_object_name(HANDLE h, WCHAR *name, ULONG cap);
ANYPOLL__INTERNAL
BOOL anypoll__sys_associate(HANDLE h, HANDLE port, ULONG_PTR key);
ANYPOLL__INTERNAL
BOOL anypoll__sys_skip_port_on_success(HANDLE h);
ANYPOLL__INTERNAL
int anypoll__sys_dissociate(HANDLE h);

#endif /* ANYPOLL_DOOR_H */
