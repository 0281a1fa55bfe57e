/* SPDX-License-Identifier: MIT */
/* The NT (ntdll) declarations mingw-w64 lacks, and the one list of ntdll
 * imports; included by win.h only, after the Windows headers. */
#ifndef ANYPOLL_NT_H
#define ANYPOLL_NT_H

/* ---- NT interfaces (ntdll) not declared by <winternl.h> ---------------- */

#ifndef STATUS_PENDING
#  define STATUS_PENDING ((NTSTATUS)0x00000103L)
#endif
#define ANYPOLL_STATUS_CANCELLED ((NTSTATUS)0xC0000120L)

/* FILE_INFORMATION_CLASS values used here. */
#define ANYPOLL_FILE_ACCESS_INFORMATION 8
#define ANYPOLL_FILE_MODE_INFORMATION 16
#define ANYPOLL_FILE_PIPE_LOCAL_INFORMATION 24

#define ANYPOLL_FILE_PIPE_DISCONNECTED_STATE 1
#define ANYPOLL_FILE_PIPE_CONNECTED_STATE 3
#define ANYPOLL_FILE_PIPE_CLOSING_STATE 4
/* FilePipeLocalInformation's NamedPipeType of a message-type pipe. */
#define ANYPOLL_FILE_PIPE_MESSAGE_TYPE 1
/* FSCTL_PIPE_PEEK, and the head of the FILE_PIPE_PEEK_BUFFER it fills. */
#define ANYPOLL_FSCTL_PIPE_PEEK 0x0011400C
typedef struct {
  ULONG NamedPipeState;
  ULONG ReadDataAvailable;
  ULONG NumberOfMessages;
  ULONG MessageLength;
} anypoll__pipe_peek_head;

typedef struct {
  ULONG NamedPipeType;
  ULONG NamedPipeConfiguration;
  ULONG MaximumInstances;
  ULONG CurrentInstances;
  ULONG InboundQuota;
  ULONG ReadDataAvailable;
  ULONG OutboundQuota;
  ULONG WriteQuotaAvailable;
  ULONG NamedPipeState;
  ULONG NamedPipeEnd;
} anypoll__pipe_local_info;

typedef NTSTATUS(NTAPI anypoll__nt_query_information_file_fn)(
    HANDLE, PIO_STATUS_BLOCK, PVOID, ULONG, ULONG);
typedef NTSTATUS(NTAPI anypoll__nt_device_io_control_file_fn)(
    HANDLE, HANDLE, PVOID, PVOID, PIO_STATUS_BLOCK, ULONG, PVOID, ULONG, PVOID,
    ULONG);
/* NtFsControlFile has NtDeviceIoControlFile's parameters; it sends the
 * file system's requests (FSCTL_PIPE_PEEK), which a device I/O control
 * (what DeviceIoControl sends for a named-pipe code) does not reach. */
typedef anypoll__nt_device_io_control_file_fn anypoll__nt_fs_control_file_fn;
typedef NTSTATUS(NTAPI anypoll__nt_create_file_fn)(
    PHANDLE, ACCESS_MASK, POBJECT_ATTRIBUTES, PIO_STATUS_BLOCK, PLARGE_INTEGER,
    ULONG, ULONG, ULONG, ULONG, PVOID, ULONG);
typedef NTSTATUS(NTAPI anypoll__nt_cancel_io_file_ex_fn)(HANDLE,
                                                         PIO_STATUS_BLOCK,
                                                         PIO_STATUS_BLOCK);

typedef NTSTATUS(NTAPI anypoll__nt_query_object_fn)(HANDLE, ULONG, PVOID,
                                                    ULONG, PULONG);
typedef NTSTATUS(NTAPI anypoll__nt_compare_objects_fn)(HANDLE, HANDLE);
typedef NTSTATUS(NTAPI anypoll__nt_set_information_file_fn)(
    HANDLE, PIO_STATUS_BLOCK, PVOID, ULONG, ULONG);
/* FileReplaceCompletionInformation (Windows 8.1 and later): with a NULL
 * port, ends a handle's association with its completion port. */
#define ANYPOLL_FILE_REPLACE_COMPLETION_INFORMATION 61
typedef struct {
  HANDLE Port;
  PVOID Key;
} anypoll__file_completion_info;

/* The one list of ntdll imports: X(field, exported name, required). Both
 * the table below and its resolution (init.c) are made from it. */
#define ANYPOLL_NT_IMPORTS(X)                                                \
  X(query_information_file, "NtQueryInformationFile", 1)                     \
  X(device_io_control_file, "NtDeviceIoControlFile", 1)                      \
  X(fs_control_file, "NtFsControlFile", 1)                                   \
  X(create_file, "NtCreateFile", 1)                                          \
  X(cancel_io_file_ex, "NtCancelIoFileEx", 1)                                \
  X(query_object, "NtQueryObject", 0)                                        \
  /* Windows 10 and later (and Wine 8); NULL before. */                      \
  X(compare_objects, "NtCompareObjects", 0)                                  \
  X(set_information_file, "NtSetInformationFile", 0)

/* Resolved once by anypoll__win_init(); the required ones are never NULL
 * after it succeeds. */
#define ANYPOLL_NT_FIELD(field, name, required)                              \
  anypoll__nt_##field##_fn *field;
struct anypoll__nt {
  ANYPOLL_NT_IMPORTS(ANYPOLL_NT_FIELD)
};
#undef ANYPOLL_NT_FIELD
ANYPOLL__INTERNAL_DATA struct anypoll__nt anypoll__nt;

#endif /* ANYPOLL_NT_H */
