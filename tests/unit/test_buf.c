/* Unit tests for the capped buffer (lib/base/buf.c). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"

static void test_buf__appends_and_stays_nul_terminated(void **state)
{
	struct buf b = BUF_INIT(1024);

	assert_string_equal(buf_cstr(&b), "");
	assert_int_equal(buf_append(&b, "abc", 3), 0);
	assert_int_equal(buf_appendf(&b, "-%d-%s", 42, "x"), 0);
	assert_int_equal(buf_append_str(&b, "!"), 0);
	assert_string_equal(buf_cstr(&b), "abc-42-x!");
	assert_int_equal(b.len, 9);
	buf_release(&b);
}

static void test_buf__cap_is_enforced_and_leaves_contents(void **state)
{
	struct buf b = BUF_INIT(8);

	assert_int_equal(buf_append(&b, "12345678", 8), 0);
	assert_int_equal(buf_append(&b, "9", 1), -EMSGSIZE);
	assert_int_equal(buf_appendf(&b, "%s", "more"), -EMSGSIZE);
	assert_string_equal(buf_cstr(&b), "12345678");
	buf_release(&b);
}

static void test_buf__cap_overflow_arithmetic_is_safe(void **state)
{
	struct buf b = BUF_INIT(16);

	assert_int_equal(buf_append(&b, "x", 1), 0);
	assert_int_equal(buf_append(&b, "y", (size_t)-1), -EMSGSIZE);
	assert_int_equal(b.len, 1);
	buf_release(&b);
}

static void test_buf__urlencode_escapes_reserved_bytes(void **state)
{
	struct buf b = BUF_INIT(256);

	assert_int_equal(buf_append_urlencoded(&b, "a b/c?d=e&f%g~h.i_j-k"), 0);
	assert_string_equal(buf_cstr(&b), "a%20b%2Fc%3Fd%3De%26f%25g~h.i_j-k");
	buf_release(&b);
}

static void test_buf__consume_and_detach(void **state)
{
	struct buf b = BUF_INIT(64);
	char *s;

	buf_append_str(&b, "line1\nline2");
	buf_consume(&b, 6);
	assert_string_equal(buf_cstr(&b), "line2");
	s = buf_detach(&b);
	assert_string_equal(s, "line2");
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	free(s);
	s = buf_detach(&b);
	assert_string_equal(s, "");
	free(s);
}

static void test_buf__read_file_appends_and_respects_cap(void **state)
{
	char path[] = "/tmp/landlord-test-buf-XXXXXX";
	int fd = mkstemp(path);
	struct buf b = BUF_INIT(10), small = BUF_INIT(4);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	buf_append_str(&b, ">");
	assert_int_equal(buf_read_file(&b, path, false), 0);
	assert_string_equal(buf_cstr(&b), ">hello");
	buf_append_str(&small, "ab");
	assert_int_equal(buf_read_file(&small, path, true), -EMSGSIZE);
	assert_string_equal(buf_cstr(&small), "ab");
	assert_int_equal(buf_read_file(&b, "/nonexistent/landlord", true), -ENOENT);
	unlink(path);
	buf_release(&b);
	buf_release(&small);
}

static void test_buf__read_file_that_must_not_block_refuses_an_idle_fifo(void **state)
{
	char dir[] = "/tmp/landlord-test-fifo-XXXXXX", path[64];
	struct buf b = BUF_INIT(64);
	int writer;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	/* A writer that never writes: a blocking read would hang here forever. */
	writer = open(path, O_RDWR | O_NONBLOCK);
	assert_true(writer >= 0);
	assert_int_equal(buf_read_file(&b, path, false), -EAGAIN);
	assert_int_equal(b.len, 0);
	close(writer);
	unlink(path);
	rmdir(dir);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_buf__appends_and_stays_nul_terminated),
	        cmocka_unit_test(test_buf__cap_is_enforced_and_leaves_contents),
	        cmocka_unit_test(test_buf__cap_overflow_arithmetic_is_safe),
	        cmocka_unit_test(test_buf__urlencode_escapes_reserved_bytes),
	        cmocka_unit_test(test_buf__consume_and_detach),
	        cmocka_unit_test(test_buf__read_file_appends_and_respects_cap),
	        cmocka_unit_test(test_buf__read_file_that_must_not_block_refuses_an_idle_fifo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
