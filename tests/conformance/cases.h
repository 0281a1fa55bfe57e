/* SPDX-License-Identifier: MIT */
/* The conformance matrix's table: every descriptor kind and state (a
 * fixture), each polled with every combination of events in its mask, and
 * the whole-call rules. The expected results are not here: they come from
 * running this table against Linux's own poll() (reference.txt).
 *
 * FIXTURE(name, setup, events_mask, flags)
 *   setup       fx_<name>: builds the state, sets fx->fd (the descriptor
 *               polled) and keeps whatever else must stay open
 *   events_mask which of IN, OUT, PRI are combined (every subset, with 0);
 *               E_BANDS adds RDNORM, RDBAND, WRNORM, WRBAND one at a time
 *   flags       F_TTY: needs a terminal (Windows: a console, --console)
 * CALL(name, fn)
 *   a whole-call rule, wc_<name>, which makes its own call(s). */

#define ALL (E_IN | E_OUT | E_PRI)

/* Pipes: the read end, ... */
FIXTURE(pipe_r_empty, pipe_r_empty, ALL, 0)
FIXTURE(pipe_r_data, pipe_r_data, ALL, 0)
FIXTURE(pipe_r_full, pipe_r_full, ALL, 0)
FIXTURE(pipe_r_writer_closed, pipe_r_writer_closed, ALL, 0)
FIXTURE(pipe_r_writer_closed_data, pipe_r_writer_closed_data, ALL, 0)
/* ... and the write end. */
FIXTURE(pipe_w_empty, pipe_w_empty, ALL, 0)
FIXTURE(pipe_w_data, pipe_w_data, ALL, 0)
FIXTURE(pipe_w_full, pipe_w_full, ALL, 0)
FIXTURE(pipe_w_reader_closed, pipe_w_reader_closed, ALL, 0)
FIXTURE(pipe_w_reader_closed_full, pipe_w_reader_closed_full, ALL, 0)

/* TCP: connected, ... */
FIXTURE(tcp_idle, tcp_idle, ALL | E_BANDS, 0)
FIXTURE(tcp_data, tcp_data, ALL | E_BANDS, 0)
FIXTURE(tcp_recv_full, tcp_recv_full, ALL | E_BANDS, 0)
FIXTURE(tcp_send_full, tcp_send_full, ALL | E_BANDS, 0)
FIXTURE(tcp_peer_shut_wr, tcp_peer_shut_wr, ALL | E_BANDS, 0)
FIXTURE(tcp_peer_shut_wr_data, tcp_peer_shut_wr_data, ALL | E_BANDS, 0)
FIXTURE(tcp_peer_closed, tcp_peer_closed, ALL | E_BANDS, 0)
FIXTURE(tcp_peer_closed_data, tcp_peer_closed_data, ALL | E_BANDS, 0)
FIXTURE(tcp_peer_reset, tcp_peer_reset, ALL | E_BANDS, 0)
FIXTURE(tcp_peer_reset_data, tcp_peer_reset_data, ALL | E_BANDS, 0)
FIXTURE(tcp_oob, tcp_oob, ALL | E_BANDS, 0)
FIXTURE(tcp_oob_data, tcp_oob_data, ALL | E_BANDS, 0)
FIXTURE(tcp_self_shut_wr, tcp_self_shut_wr, ALL | E_BANDS, 0)
/* ... listening, connecting, refused, never connected. */
FIXTURE(tcp_listen_pending, tcp_listen_pending, ALL | E_BANDS, 0)
FIXTURE(tcp_listen_idle, tcp_listen_idle, ALL | E_BANDS, 0)
FIXTURE(tcp_connecting, tcp_connecting, ALL | E_BANDS, 0)
FIXTURE(tcp_refused, tcp_refused, ALL | E_BANDS, 0)
FIXTURE(tcp_unconnected, tcp_unconnected, ALL | E_BANDS, 0)

/* UDP (datagram_poll on Linux: writable includes POLLWRBAND). */
FIXTURE(udp_idle, udp_idle, ALL | E_BANDS, 0)
FIXTURE(udp_data, udp_data, ALL | E_BANDS, 0)

/* AF_UNIX stream pairs. */
FIXTURE(unix_idle, unix_idle, ALL | E_BANDS, 0)
FIXTURE(unix_data, unix_data, ALL | E_BANDS, 0)
FIXTURE(unix_send_full, unix_send_full, ALL | E_BANDS, 0)
FIXTURE(unix_peer_shut_wr, unix_peer_shut_wr, ALL | E_BANDS, 0)
FIXTURE(unix_peer_closed, unix_peer_closed, ALL | E_BANDS, 0)
FIXTURE(unix_peer_closed_data, unix_peer_closed_data, ALL | E_BANDS, 0)

/* Files and devices. */
FIXTURE(file_rw, file_rw, ALL, 0)
FIXTURE(file_readonly, file_readonly, ALL, 0)
FIXTURE(null_device, null_device, ALL, 0)

/* Terminals: input and output asked separately, since a Windows console
 * has one handle for each while a terminal has one for both. */
FIXTURE(tty_in_empty, tty_in_empty, E_IN | E_PRI, F_TTY)
FIXTURE(tty_in_typed, tty_in_typed, E_IN | E_PRI, F_TTY)
FIXTURE(tty_out, tty_out, E_OUT | E_PRI, F_TTY)

/* Descriptors that are not open, or negative. */
FIXTURE(fd_closed, fd_closed, ALL, 0)
FIXTURE(fd_closed_high, fd_closed_high, ALL, 0)
FIXTURE(fd_negative, fd_negative, ALL, 0)
FIXTURE(fd_negative_other, fd_negative_other, ALL, 0)
/* Open descriptors numbered FD_SETSIZE - 1 and FD_SETSIZE (1024 on Linux):
 * the last that fits in an fd_set, and the first that does not. */
FIXTURE(fd_open_1023, fd_open_1023, E_IN | E_OUT, 0)
FIXTURE(fd_open_high, fd_open_high, E_IN | E_OUT, 0)

/* Whole-call rules. */
CALL(count_mixed, count_mixed)
CALL(revents_cleared, revents_cleared)
CALL(events_zero_all, events_zero_all)
CALL(dup_same_events, dup_same_events)
CALL(dup_different_events, dup_different_events)
CALL(dup_closed, dup_closed)
CALL(mixed_kinds, mixed_kinds)
CALL(nfds_zero, nfds_zero)
CALL(nfds_zero_timeout, nfds_zero_timeout)
CALL(null_nfds_zero, null_nfds_zero)
CALL(null_nfds_one, null_nfds_one)
CALL(nfds_over_limit, nfds_over_limit)
CALL(nfds_at_limit, nfds_at_limit)
CALL(timeout_zero_nothing, timeout_zero_nothing)
CALL(timeout_positive_nothing, timeout_positive_nothing)
CALL(timeout_positive_negative_fds, timeout_positive_negative_fds)
CALL(timeout_positive_ready, timeout_positive_ready)
CALL(timeout_positive_closed_fd, timeout_positive_closed_fd)
CALL(timeout_minus1_ready, timeout_minus1_ready)
CALL(timeout_negative_other_ready, timeout_negative_other_ready)
CALL(timeout_positive_wakeup_pipe, timeout_positive_wakeup_pipe)
CALL(timeout_positive_wakeup_hup, timeout_positive_wakeup_hup)
CALL(timeout_positive_wakeup_tcp, timeout_positive_wakeup_tcp)
CALL(timeout_minus1_wakeup_pipe, timeout_minus1_wakeup_pipe)
CALL(timeout_minus1_wakeup_tcp, timeout_minus1_wakeup_tcp)
CALL(timeout_positive_unasked_data, timeout_positive_unasked_data)
CALL(interrupted_positive, interrupted_positive)
CALL(interrupted_minus1, interrupted_minus1)

#undef ALL
