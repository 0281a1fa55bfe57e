/* SPDX-License-Identifier: MIT */
/* Every test case, once. CMake reads this file to register each case with
 * CTest (one process per case and backend); runner.c builds its table from
 * it. TEST_CASE runs everywhere; TEST_CASE_WIN only on Windows, for
 * behaviour that has no POSIX counterpart (APCs, consoles, Win32 handles);
 * TEST_CASE_CONSOLE on Windows under script(1), which gives Wine a console. */
#ifndef TEST_CASE_WIN
#  define TEST_CASE_WIN(name)
#endif
#ifndef TEST_CASE_CONSOLE
#  define TEST_CASE_CONSOLE(name)
#endif
/* TEST_CASE_POSIX: POSIX only (pseudo-terminals, signals). */
#ifndef TEST_CASE_POSIX
#  define TEST_CASE_POSIX(name)
#endif
/* TEST_CASE_SET: a case of the watch set, run natively and under Wine once
 * per set backend ("setdefault", "setpoll"), not once per poll backend.
 * TEST_CASE_SET_POSIX: the same, POSIX only (signals). */
#ifndef TEST_CASE_SET
#  define TEST_CASE_SET(name) TEST_CASE(name)
#endif
#ifndef TEST_CASE_SET_POSIX
#  define TEST_CASE_SET_POSIX(name)
#endif
/* TEST_CASE_NO_LEGACY_WIN: everywhere, except the historical strategies on
 * Windows, which classify every descriptor again each millisecond: a
 * descriptor closed by another thread can be caught half-classified there
 * (docs/reliability.md, Limits). */
#ifndef TEST_CASE_NO_LEGACY_WIN
#  define TEST_CASE_NO_LEGACY_WIN(name) TEST_CASE(name)
#endif

/* TEST_CASE_SPAWN: a case of anypoll_spawn (test_spawn.c), run once
 * natively and under Wine with the default backends (CTest name
 * spawn.CASE), and natively once more with the POSIX fallback for systems
 * without pidfd_open (spawnreaper.CASE). */
#ifndef TEST_CASE_SPAWN
#  define TEST_CASE_SPAWN(name) TEST_CASE(name)
#endif
/* TEST_CASE_SPAWN_POSIX: the same, POSIX only (descriptor numbers). */
#ifndef TEST_CASE_SPAWN_POSIX
#  define TEST_CASE_SPAWN_POSIX(name)
#endif

/* test_basic.c: whole-call rules */
TEST_CASE(timeout_zero_nothing_ready)
TEST_CASE(pipe_data_pollin)
TEST_CASE(pipe_writer_closed_pollhup)
TEST_CASE(invalid_fd_pollnval)
TEST_CASE(success_leaves_errno)
TEST_CASE(negative_fd_ignored)
TEST_CASE(nfds_zero_sleeps_for_timeout)
TEST_CASE(null_fds_with_nfds_efault)
TEST_CASE(wild_fds_pointer_efault)
TEST_CASE(unknown_backend_einval)

/* Waiting and waking, on every kind: test_wait.c (pipes), test_wait_socket.c
 * (sockets), test_wait_calls.c (timeouts, many entries, kinds or threads) */
TEST_CASE(pipe_wakes_on_write_from_thread)
TEST_CASE(pipe_wakes_on_writer_close)
TEST_CASE(pipe_data_then_writer_closed)
TEST_CASE(pipe_write_end_reader_closed)
TEST_CASE(pipe_pollout_while_reader_blocked)
TEST_CASE(pipe_two_threads_do_not_block_each_other)
TEST_CASE(pipe_reads_after_poll_do_not_hang)
TEST_CASE(pipe_waits_cancelled_repeatedly)
TEST_CASE(pipe_wakes_on_write_from_child)
TEST_CASE(pipe_hup_when_child_killed)
TEST_CASE(socket_wakes_on_send)
TEST_CASE(socket_peer_shutdown_is_readable)
TEST_CASE(socket_listener_pending_connection)
TEST_CASE(socket_connect_refused)
TEST_CASE(socket_never_connected_is_hup)
TEST_CASE(socket_connect_completes_pollout)
TEST_CASE(socket_reset_by_peer)
TEST_CASE(socket_oob_pollpri)
TEST_CASE(socket_blocking_mode_preserved)
TEST_CASE(timeout_positive_never_early)
TEST_CASE(timeout_wakes_before_deadline_on_data)
TEST_CASE(mixed_kinds_one_call)
TEST_CASE(duplicate_entries_each_reported)
TEST_CASE(many_descriptors_4096)
TEST_CASE(concurrent_callers)

/* test_stress.c: load and concurrency */
TEST_CASE(stress_bytes_exact)
TEST_CASE(stress_no_lost_wakeups)
TEST_CASE(stress_concurrent_pollers)
/* test_reliability.c: leaks, faults, bad input */
TEST_CASE(no_leaks_after_many_calls)
TEST_CASE_NO_LEGACY_WIN(fault_pipe_closed_by_other_thread_mid_wait)
TEST_CASE_NO_LEGACY_WIN(fault_socket_closed_by_other_thread_mid_wait)
TEST_CASE(fault_socket_peer_killed_mid_wait)
TEST_CASE(bad_input_huge_nfds_einval)
TEST_CASE(bad_input_garbage_event_bits)
TEST_CASE(bad_input_extreme_timeouts)
TEST_CASE(bad_input_never_opened_fds)

/* test_shared_pipes.c: many threads on one pipe, duplicates */
TEST_CASE(pipe_threads_timeouts_forever_and_100)
TEST_CASE(pipe_dup_polled_while_other_thread_waits)
TEST_CASE(stress_threads_mixed_timeouts_shared_pipes)
TEST_CASE(pipe_drained_by_other_thread_is_never_hup)
TEST_CASE(pipe_and_dup_in_one_call)
/* test_win_set.c: the watch set's Windows backend */
TEST_CASE_WIN(set_win_read_shared_with_poll)
TEST_CASE_WIN(set_win_overlapped_pipe)
TEST_CASE_WIN(set_win_overlapped_pipe_closed_before_del)
TEST_CASE_WIN(set_win_anypipe_closed_before_del)
TEST_CASE_WIN(set_win_anypipe_dup_after_add_closed_before_del)
TEST_CASE_WIN(set_win_anypipe_closed_unarmed_value_reused)
TEST_CASE_WIN(set_win_anypipe_closed_armed_value_reused)
TEST_CASE_WIN(set_win_anypipe_no_helper_thread)
TEST_CASE_WIN(set_win_anypipe_in_two_sets)
TEST_CASE_WIN(set_win_anypipe_foreign_packet_dropped)
TEST_CASE_WIN(set_win_socket_closed_before_del)
TEST_CASE_WIN(set_win_pipe_closed_before_del_model)
TEST_CASE_WIN(set_win_failed_post_retried)
TEST_CASE_WIN(set_win_failed_wake_retried)
TEST_CASE_WIN(set_win_failed_posts_relisted)
/* test_win_set.c, issue 32: a zero-length message kept by the set */
TEST_CASE_WIN(set_win_message_pipe_zero_length_message_kept)
/* test_win_set_life.c: the Windows set over many lifecycles (no crash in
 * add/wait/del cycles, no growth over 10^4 anypoll_pipe lifecycles) */
TEST_CASE_WIN(set_win_overlapped_pipe_cycles)
TEST_CASE_WIN(set_win_anypipe_cycles)
TEST_CASE_WIN(set_win_anypipe_cycles_threads_bounded)
TEST_CASE_WIN(set_win_closed_entry_reused_by_file_mod_fails)
TEST_CASE_WIN(set_win_anypipe_lifecycles_heap_flat)
TEST_CASE_WIN(set_win_anypipe_stale_packet_after_del)
/* test_win_set_inherit.c: no child process waits behind a read the set
 * keeps parked (the lock model across processes) */
TEST_CASE_WIN(set_win_inherited_pipe_child_not_held)
TEST_CASE_WIN(set_win_unshared_keeps_read_parked)
TEST_CASE_WIN(set_win_mod_drops_unshared)
TEST_CASE_WIN(set_win_pipe_with_inherited_duplicate_not_held)
TEST_CASE_WIN(set_win_shared_pipe_woken_by_read)
TEST_CASE_WIN(set_win_shared_pipe_child_between_waits)
TEST_CASE_WIN(set_win_peek_budget_per_tick)
/* test_win_file_lock.c: Windows only: the file-object lock (its model,
 * and waits that must not hold up a call of the program) */
TEST_CASE_WIN(lock_model_fires_both_orders)
TEST_CASE_WIN(duplex_pipe_pollout_while_other_thread_reads)
TEST_CASE_WIN(nowait_read_end_waits_without_spinning)
TEST_CASE_WIN(listening_server_waits_without_spinning)
TEST_CASE_WIN(listening_overlapped_server_waits_without_spinning)
TEST_CASE_WIN(listening_pipe_keeps_idle_pipes_armed)
TEST_CASE_WIN(poll_idle_message_pipes_recheck_budget)
TEST_CASE_WIN(poll_timeout_no_backoff_checks_after_deadline)
TEST_CASE_WIN(closed_descriptor_pollnval_under_strict_handler)
TEST_CASE_WIN(query_on_other_pipe_does_not_hold_up_helper)
TEST_CASE_WIN(duplex_sync_pipe_written_while_polled)
TEST_CASE_WIN(message_pipe_zero_length_message_kept)
TEST_CASE_WIN(pipe_disarm_bounded_when_cancel_misses)
TEST_CASE_WIN(overlapped_pipe_closed_mid_wait_with_duplicate_open)

/* test_win32.c: Windows only */
TEST_CASE_WIN(apc_interrupts_wait_with_eintr)
TEST_CASE_WIN(wsaeventselect_association_kept)
TEST_CASE_WIN(overlapped_named_pipe)
TEST_CASE_WIN(nul_device_always_ready)
TEST_CASE_WIN(resource_failure_then_recovery)
TEST_CASE_WIN(helper_failure_while_arming)
TEST_CASE_WIN(socket_base_handle_refused)
TEST_CASE_CONSOLE(console_ignores_non_key_events)
TEST_CASE_CONSOLE(console_key_down_is_pollin)
TEST_CASE_CONSOLE(console_output_pollout)
TEST_CASE_CONSOLE(console_in_set_key_down_is_pollin)

/* Terminals and other edges: test_posix.c (POSIX only), test_win_console.c
 * (Windows only: console input, the DLL's lifetime, errno) */
TEST_CASE_POSIX(closed_between_rounds_pollnval)
TEST_CASE_POSIX(shut_socket_probe_no_sigpipe)
TEST_CASE_POSIX(poll_thread_cancellation_frees_entries)
TEST_CASE_POSIX(tty_eof_is_pollin)
TEST_CASE_POSIX(pty_master_slave_closed_pollhup)
TEST_CASE_CONSOLE(console_line_mode_waits_for_enter)
TEST_CASE_CONSOLE(console_raw_mode_any_character)
TEST_CASE_CONSOLE(console_alt_numpad_kept_raw)
TEST_CASE_CONSOLE(console_alt_numpad_kept_line)
TEST_CASE_CONSOLE(console_polled_by_several_threads_loses_nothing)
TEST_CASE_WIN(dll_unload_keeps_process_alive)
TEST_CASE_WIN(win32_errors_map_to_listed_errno)

/* test_reuse.c: a descriptor's number reused by another kind of object. */
TEST_CASE(reuse_descriptor_changes_kind)
TEST_CASE(reuse_descriptor_in_mixed_call)
/* test_bands.c: events a socket never reports, asked alone. */
TEST_CASE(socket_band_only_waits_asleep)
TEST_CASE(pipe_and_file_band_bits_as_linux)
/* test_set.c: the watch set, once per set backend (setdefault, setpoll). */
TEST_CASE_SET(set_bad_arguments_einval)
TEST_CASE_SET(set_errors_leave_set_unchanged)
TEST_CASE_SET(set_level_triggered)
TEST_CASE_SET(set_pollout_and_mod_changes_events_and_data)
TEST_CASE_SET(set_oneshot_once_then_rearmed_by_mod)
TEST_CASE_SET(set_fair_when_more_ready_than_max)
TEST_CASE_SET(set_fair_when_ready_while_armed)
TEST_CASE_SET(set_files_and_devices_always_ready)
TEST_CASE_SET(set_thread_add_of_ready_fd_wakes_waiter)
TEST_CASE_SET(set_thread_mod_and_del_take_effect_in_wait)
TEST_CASE_SET(set_several_waiters_oneshot_delivered_once)
TEST_CASE_SET(set_several_waiters_level_triggered_all_see_it)
TEST_CASE_SET(set_close_before_del)
TEST_CASE_SET(set_no_side_effects)
TEST_CASE_SET(set_timeouts)
TEST_CASE_SET(set_interrupted_wait_eintr)
TEST_CASE_SET(set_socket_mod_drops_result_from_before)
TEST_CASE_SET(set_never_connected_socket_every_wait)
/* test_set_associate.c: ANYPOLL_ASSOCIATE's zero-byte receive reports what
 * the AFD poll does (anchors issue) */
TEST_CASE_SET(set_associate_socket_same_as_without)
TEST_CASE_SET(set_associate_socket_mod_oneshot_reset)
TEST_CASE_SET(set_associate_socket_again_and_in_two_sets)
TEST_CASE_SET(set_associate_closed_before_del_and_datagram)
TEST_CASE_SET(set_associate_listener)
TEST_CASE_SET(set_associate_reset_level_triggered)
TEST_CASE_SET(set_associate_urgent_data_alone)
TEST_CASE_WIN(set_win_associate_foreign_packet_dropped)
TEST_CASE_WIN(set_win_associate_skip_on_success_set_before)
TEST_CASE_SET(anypoll_pipe_concurrent_readers_writers)
TEST_CASE_SET(anypoll_pipe_in_a_set)
TEST_CASE_SET(anypoll_pipe_closed_before_del_pollnval)
/* test_set.c, the set's check after a read that emptied an anypoll_pipe
 * (bench/anchors, issue of the set against libuv and wepoll). */
TEST_CASE_SET(anypoll_pipe_set_after_short_read)
TEST_CASE_SET(anypoll_read_blocks_until_write_then_eof)
TEST_CASE_SET(anypoll_write_epipe_after_reader_closes)
TEST_CASE_SET(anypoll_read_write_bad_arguments)
TEST_CASE_SET(anypoll_close_socket_and_pipes)
/* test_set_defects.c: always-ready entries among the rest (no busy wait,
 * every waiter woken, the rotation's bound); test_set_posix.c (POSIX
 * only): numbers closed before del, unopened numbers, cancellation. */
TEST_CASE_SET(set_no_bits_asked_waits_asleep)
TEST_CASE_SET(set_two_waiters_always_ready_both_wake)
TEST_CASE_SET(set_fair_with_always_ready_entries)
TEST_CASE_SET_POSIX(set_closed_number_taken_by_the_set)
TEST_CASE_SET_POSIX(set_closed_always_ready_entry_not_reported)
TEST_CASE_SET_POSIX(set_unopened_huge_number_allocates_nothing)
TEST_CASE_SET_POSIX(set_thread_cancellation_leaves_set_usable)
TEST_CASE_SET_POSIX(set_dup2_back_after_close_before_del)
TEST_CASE_SET_POSIX(set_wait_max_without_limit)
/* The set's own descriptors (fix-set). */
TEST_CASE_SET_POSIX(set_add_of_own_descriptor)
/* test_set_stress.c, test_set_flips.c: the set under load. */
TEST_CASE_SET(stress_set_oneshot_bytes_exact)
TEST_CASE_SET(stress_set_mod_flips_direction)
/* test_set_win_defects.c: the watch set against issue 32's defects (first
 * seen on Windows), once per set backend, everywhere. */
TEST_CASE_SET(set_freed_value_reused_by_pipe_is_the_pipe)
TEST_CASE_SET(set_freed_value_reused_by_null_device_is_ready)
TEST_CASE_SET(set_fair_always_ready_and_woken_max1)
TEST_CASE_SET(set_fair_always_ready_and_woken_max4)
TEST_CASE_SET(set_many_ready_in_one_wait_and_fair)
TEST_CASE_SET(set_write_end_pollerr_without_pollout)
TEST_CASE_SET(set_pipe_no_bits_asked_waits_asleep)
TEST_CASE_SET(set_two_waiters_see_entry_that_stays_ready)
/* test_spawn.c: anypoll_spawn and process descriptors (issue 36): the
 * calls, their errors, exit codes, kill, the environment. */
TEST_CASE_SPAWN(spawn_bad_arguments_einval)
TEST_CASE_SPAWN(spawn_not_found_enoent)
TEST_CASE_SPAWN(spawn_bad_stdio_ebadf)
TEST_CASE_SPAWN(spawn_bad_proc_ebadf)
TEST_CASE_SPAWN(spawn_exit_codes)
TEST_CASE_SPAWN(spawn_proc_pollin_only_after_exit)
TEST_CASE_SPAWN(spawn_kill_is_137)
TEST_CASE_SPAWN(spawn_envp)
TEST_CASE_SPAWN(spawn_close_proc_leaves_child)
/* fix-spawn: SIGCHLD ignored (the kernel reaps the children). */
TEST_CASE_SPAWN_POSIX(spawn_sigchld_ignored)
/* SIGCHLD ignored, the child's pid reused: the kill reaches no one. */
TEST_CASE_SPAWN_POSIX(spawn_kill_never_reaches_reused_pid)
/* test_spawn_io.c: data through the child's pipes, its arguments, the
 * streams it gets, many children at once. */
TEST_CASE_SPAWN(spawn_exit_before_read_loses_nothing)
TEST_CASE_SPAWN(spawn_output_and_exit_in_one_set)
TEST_CASE_SPAWN(spawn_stdin_never_read_pollout_until_full)
TEST_CASE_SPAWN(spawn_cat_round_trip_20mib)
TEST_CASE_SPAWN(spawn_argv_exact)
TEST_CASE_SPAWN(spawn_stdio_descriptor_and_null)
TEST_CASE_SPAWN(spawn_second_child_does_not_keep_first_pipe)
TEST_CASE_SPAWN(spawn_64_children_in_one_set)
TEST_CASE_SPAWN_POSIX(spawn_child_gets_only_its_streams)
TEST_CASE_SPAWN_POSIX(spawn_stdio_swapped_streams)
/* test_win_spawn.c: anypoll_spawn's Windows-only rules (issue 36): argv[0],
 * the ANSI code page, batch files, the handle list, the PATH search. */
TEST_CASE_WIN(win_spawn_argv0_rules)
TEST_CASE_WIN(win_spawn_ansi_code_page)
TEST_CASE_WIN(win_spawn_batch_no_injection)
TEST_CASE_WIN(win_spawn_handle_list_only)
TEST_CASE_WIN(win_spawn_path_search)
TEST_CASE_WIN(win_spawn_stdin_pending_write_delivered)
/* fix-spawn: cmd.exe's 8191-character limit on a batch file's line. */
TEST_CASE_WIN(win_spawn_batch_line_limit)
/* inherit: no handle of anypoll_spawn's inheritable after it returns;
 * what a process created during its CreateProcessW gets (BUGS). */
TEST_CASE_WIN(win_spawn_later_inheriting_child_gets_no_end)
TEST_CASE_WIN(win_spawn_process_created_in_the_window_holds_child_ends)
