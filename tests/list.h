/* Every test case, once. CMake reads this file to register each case with
 * CTest (one process per case and backend); runner.c builds its table from
 * it. A case marked CONSOLE needs a console and runs under script(1). */
TEST_CASE(timeout_zero_nothing_ready)
TEST_CASE(pipe_data_pollin)
TEST_CASE(pipe_writer_closed_pollhup)
TEST_CASE(invalid_fd_pollnval)
TEST_CASE(negative_fd_ignored)
TEST_CASE(nfds_zero_sleeps_for_timeout)
TEST_CASE(null_fds_with_nfds_efault)
TEST_CASE(unknown_backend_einval)
TEST_CASE(pipe_waits_cancelled_repeatedly)
