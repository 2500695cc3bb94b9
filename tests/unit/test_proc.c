/* test_proc.c - running a program: argv, environment, fds, capped output, time-outs, groups. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/mem.h"
#include "base/proc.h"

#define MIB (1u << 20)

static void sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * CLOCK_NS_PER_MS};

	nanosleep(&ts, NULL);
}

static struct proc_spec spec_of(const char *path, char *const *argv)
{
	return (struct proc_spec){.path = path, .argv = argv, .timeout_ms = 5000};
}

/* Run /bin/sh -c @script; its exit status must be @want_exit. */
static void run_sh(const char *script, int want_exit, struct proc_result *res)
{
	char *argv[] = {"sh", "-c", (char *)script, NULL};
	struct proc_spec spec = spec_of("/bin/sh", argv);
	struct ll_err err = {{0}};

	assert_int_equal(proc_run(&spec, res, &err), 0);
	assert_int_equal(res->exit_code, want_exit);
}

static void test_proc__cat_echoes_stdin(void **state)
{
	char *argv[] = {"cat", NULL};
	struct proc_spec spec = spec_of("/bin/cat", argv);
	struct proc_result res;

	spec.input = "hello, world\n";
	spec.input_len = strlen(spec.input);
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.term_signal, 0);
	assert_false(res.timed_out);
	assert_string_equal(buf_cstr(&res.out), "hello, world\n");
	assert_int_equal(res.out_total, 13);
	assert_false(res.out_truncated);
	assert_int_equal(res.err.len, 0);
	assert_true(res.wall_ms >= 0 && res.wall_ms < 1000);
	proc_result_release(&res);
	proc_result_release(&res); /* twice is fine */
}

static void test_proc__exit_codes_and_signals(void **state)
{
	char *t_argv[] = {"true", NULL}, *f_argv[] = {"false", NULL};
	struct proc_spec t = spec_of("/bin/true", t_argv), f = spec_of("/bin/false", f_argv);
	struct proc_result res;

	assert_int_equal(proc_run(&t, &res, NULL), 0);
	assert_int_equal(res.exit_code, 0);
	proc_result_release(&res);
	assert_int_equal(proc_run(&f, &res, NULL), 0);
	assert_int_equal(res.exit_code, 1);
	proc_result_release(&res);
	run_sh("exit 3", 3, &res);
	proc_result_release(&res);
	run_sh("kill -9 $$", -1, &res);
	assert_int_equal(res.term_signal, SIGKILL);
	assert_false(res.timed_out);
	proc_result_release(&res);
}

static void test_proc__stdout_and_stderr_apart(void **state)
{
	struct proc_result res;

	run_sh("echo out; echo err >&2; echo more", 0, &res);
	assert_string_equal(buf_cstr(&res.out), "out\nmore\n");
	assert_string_equal(buf_cstr(&res.err), "err\n");
	proc_result_release(&res);
}

/* 1 MiB on stdout: 64 KiB kept, the rest counted; the child is not blocked on a full pipe. */
static void test_proc__output_over_the_cap_is_counted_and_dropped(void **state)
{
	char *argv[] = {"sh", "-c", "head -c 1048576 /dev/zero; head -c 5000 /dev/zero >&2", NULL};
	struct proc_spec spec = spec_of("/bin/sh", argv);
	struct proc_result res;

	spec.err_max = 100;
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.out.len, PROC_OUTPUT_MAX);
	assert_int_equal(res.out_total, MIB);
	assert_true(res.out_truncated);
	assert_int_equal(res.err.len, 100);
	assert_int_equal(res.err_total, 5000);
	assert_true(res.err_truncated);
	assert_true(res.wall_ms < 1000);
	proc_result_release(&res);
}

/* Over the cap, a tail keeps the last bytes: where a program's error is. */
static void test_proc__tail_keeps_the_last_bytes(void **state)
{
	char *argv[] = {
	        "sh", "-c",
	        "i=0; while [ $i -lt 300 ]; do echo line $i; echo err $i >&2; i=$((i + 1)); "
	        "done; echo Error: the last word >&2",
	        NULL};
	struct proc_spec spec = spec_of("/bin/sh", argv);
	struct proc_result res;

	spec.out_max = 20;
	spec.err_max = 30;
	spec.err_tail = true;
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_string_equal(buf_cstr(&res.out), "line 0\nline 1\nline 2");
	assert_string_equal(buf_cstr(&res.err), "\nerr 299\nError: the last word\n");
	assert_int_equal(res.err.len, 30);
	assert_true(res.out_truncated && res.err_truncated);
	assert_true(res.err_total > 300 * 6);
	proc_result_release(&res);
	spec.err_max = 8; /* one read larger than the whole cap */
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_string_equal(buf_cstr(&res.err), "st word\n");
	proc_result_release(&res);
}

/* cat writes as it reads: 1 MiB in while 1 MiB comes out must not deadlock. */
static void test_proc__big_stdin_and_stdout_together(void **state)
{
	char *argv[] = {"cat", NULL};
	struct proc_spec spec = spec_of("/bin/cat", argv);
	struct proc_result res;
	char *in = xmalloc(MIB);
	size_t i;

	for (i = 0; i < MIB; i++)
		in[i] = (char)('a' + i % 26);
	spec.input = in;
	spec.input_len = MIB;
	spec.out_max = 2 * MIB;
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.out.len, MIB);
	assert_memory_equal(res.out.p, in, MIB);
	assert_false(res.out_truncated);
	proc_result_release(&res);
	free(in);
}

/* A program that never reads its stdin: the unread input raises no SIGPIPE in this process. */
static void test_proc__input_to_a_program_that_does_not_read_it(void **state)
{
	char *argv[] = {"true", NULL};
	struct proc_spec spec = spec_of("/bin/true", argv);
	struct proc_result res;
	char *in = xcalloc(1, MIB);
	sigset_t pending;

	spec.input = in;
	spec.input_len = MIB;
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_int_equal(res.exit_code, 0);
	sigpending(&pending);
	assert_false(sigismember(&pending, SIGPIPE));
	proc_result_release(&res);
	free(in);
}

static void test_proc__summary_and_ok(void **state)
{
	char line[PROC_SUMMARY_MAX];
	struct proc_result res;

	run_sh("exit 0", 0, &res);
	assert_true(proc_result_ok(&res));
	assert_non_null(strstr(proc_result_summary(&res, line), "exit status 0 after "));
	proc_result_release(&res);
	run_sh("exit 2", 2, &res);
	assert_false(proc_result_ok(&res));
	proc_result_release(&res);
	run_sh("kill -TERM $$", -1, &res);
	assert_non_null(strstr(proc_result_summary(&res, line), "killed by SIGTERM after "));
	proc_result_release(&res);
	res.timed_out = true; /* a program that catches SIGTERM and exits 0 is still no success */
	res.exit_code = 0;
	assert_false(proc_result_ok(&res));
	assert_non_null(strstr(proc_result_summary(&res, line), "exit status 0, timed out"));
	memset(&res, 0, sizeof(res));
	res.exit_code = -1;
	assert_string_equal(proc_result_summary(&res, line), "not run");
}

static void test_proc__environment_is_exactly_the_one_given(void **state)
{
	char *argv[] = {"env", NULL};
	char *envp[] = {"A=1", "HELM_CACHE_HOME=/var/lib/landlord/helm", NULL};
	struct proc_spec spec = spec_of("/usr/bin/env", argv);
	struct proc_result res;

	setenv("LANDLORD_TEST_INHERITED", "no", 1);
	spec.envp = envp;
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_string_equal(buf_cstr(&res.out), "A=1\nHELM_CACHE_HOME=/var/lib/landlord/helm\n");
	proc_result_release(&res);
	spec.envp = NULL; /* none at all */
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_string_equal(buf_cstr(&res.out), "");
	proc_result_release(&res);
}

/* A descriptor the parent left inheritable is not in the child: only 0-2 and ls's own 3. */
static void test_proc__inherited_fds_are_closed(void **state)
{
	char *argv[] = {"ls", "/proc/self/fd", NULL};
	struct proc_spec spec = spec_of("/bin/ls", argv);
	struct proc_result res;
	int fd = open("/dev/null", O_RDONLY), high = fcntl(fd, F_DUPFD, 50);

	assert_true(fd >= 0 && high >= 50);
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(buf_cstr(&res.out), "0\n1\n2\n3\n");
	proc_result_release(&res);
	close(fd);
	close(high);
}

/* An ignored signal stays ignored across execve(): the child must have reset each, libc's too. */
static void test_proc__signals_are_reset(void **state)
{
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	unsigned long kign[8] = {(unsigned long)SIG_IGN}, kold[8] = {0}; /* handler first */
	int libc_sig = SIGRTMIN - 1; /* glibc's SIGSETXID: its sigaction() refuses it */
	struct proc_result res;

	sigaction(SIGTERM, &ign, &old);
	assert_int_equal(syscall(SYS_rt_sigaction, libc_sig, kign, kold, (NSIG - 1) / 8), 0);
	run_sh("grep -E '^Sig(Blk|Ign)' /proc/self/status", 0, &res);
	assert_string_equal(buf_cstr(&res.out),
	                    "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
	proc_result_release(&res);
	syscall(SYS_rt_sigaction, libc_sig, kold, NULL, (NSIG - 1) / 8);
	sigaction(SIGTERM, &old, NULL);
}

/* sh's pid (field 1 of /proc/$$/stat) is its process group (field 5). */
static void test_proc__own_process_group(void **state)
{
	struct proc_result res;

	run_sh("set -- $(cat /proc/$$/stat); [ \"$1\" = \"$5\" ]", 0, &res);
	proc_result_release(&res);
}

static void test_proc__cwd(void **state)
{
	char *argv[] = {"pwd", NULL};
	struct proc_spec spec = spec_of("/bin/pwd", argv);
	struct proc_result res;
	struct ll_err err = {{0}};

	spec.cwd = "/tmp";
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_string_equal(buf_cstr(&res.out), "/tmp\n");
	proc_result_release(&res);
	spec.cwd = "/nonexistent-landlord-dir";
	assert_int_equal(proc_run(&spec, &res, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "chdir"));
	proc_result_release(&res);
}

static void test_proc__exec_failure_is_not_an_exit_code(void **state)
{
	char *argv[] = {"x", NULL};
	struct proc_spec spec = spec_of("/nonexistent/landlord-helm", argv);
	struct proc_result res;
	struct ll_err err = {{0}};

	assert_int_equal(proc_run(&spec, &res, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/landlord-helm: execve: "));
	assert_int_equal(res.exit_code, -1); /* the program never ran */
	proc_result_release(&res);
	spec.path = "/etc/passwd"; /* not executable */
	assert_int_equal(proc_run(&spec, &res, &err), -EACCES);
	proc_result_release(&res);
}

static void test_proc__bad_specs(void **state)
{
	char *argv[] = {"true", NULL}, *none[] = {NULL};
	struct proc_spec spec = spec_of("true", argv);
	struct proc_result res;

	assert_int_equal(proc_run(&spec, &res, NULL), -EINVAL); /* no PATH search */
	proc_result_release(&res);
	spec = spec_of("/bin/true", none);
	assert_int_equal(proc_run(&spec, &res, NULL), -EINVAL);
	proc_result_release(&res);
	spec = spec_of("/bin/true", argv);
	spec.timeout_ms = 0;
	assert_int_equal(proc_run(&spec, &res, NULL), -EINVAL);
	proc_result_release(&res);
}

/* Whether @pid is gone (or a zombie nobody has reaped yet), within @ms. */
static bool dies_within(pid_t pid, int ms)
{
	char path[64], stat[256];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (i = 0; i < ms / 10; i++) {
		f = fopen(path, "r");
		if (!f)
			return true;
		if (!fgets(stat, sizeof(stat), f))
			stat[0] = '\0';
		fclose(f);
		if (strstr(stat, ") Z "))
			return true;
		sleep_ms(10);
	}
	return false;
}

/* The time-out: SIGTERM to the whole group, so the grandchild dies too. */
static void test_proc__timeout_kills_the_group(void **state)
{
	char *argv[] = {"sh", "-c", "sleep 60 & echo $!; wait", NULL};
	struct proc_spec spec = spec_of("/bin/sh", argv);
	struct proc_result res;

	spec.timeout_ms = 200;
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_true(res.timed_out);
	assert_false(res.cancelled);
	assert_int_equal(res.term_signal, SIGTERM);
	assert_true(res.wall_ms >= 200 && res.wall_ms < 1000);
	assert_true(dies_within((pid_t)strtol(buf_cstr(&res.out), NULL, 10), 1000));
	proc_result_release(&res);
}

/* A group that ignores SIGTERM gets SIGKILL after the grace. */
static void test_proc__timeout_escalates_to_sigkill(void **state)
{
	char *argv[] = {"sh", "-c", "trap '' TERM; sleep 60 & echo $!; wait", NULL};
	struct proc_spec spec = spec_of("/bin/sh", argv);
	struct proc_result res;

	spec.timeout_ms = 150;
	spec.grace_ms = 300;
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_true(res.timed_out);
	assert_int_equal(res.term_signal, SIGKILL);
	assert_true(res.wall_ms >= 450 && res.wall_ms < 1500);
	assert_true(dies_within((pid_t)strtol(buf_cstr(&res.out), NULL, 10), 1000));
	proc_result_release(&res);
}

/* Without pidfd the exit is found by polling waitid(): same results. */
static void test_proc__without_pidfd(void **state)
{
	char *argv[] = {"sh", "-c", "sleep 60 & wait", NULL};
	struct proc_spec spec = spec_of("/bin/sh", argv);
	struct proc_result res;

	proc_test_no_pidfd(true);
	run_sh("echo hi; exit 7", 7, &res);
	assert_string_equal(buf_cstr(&res.out), "hi\n");
	proc_result_release(&res);
	spec.timeout_ms = 100;
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_true(res.timed_out);
	assert_int_equal(res.term_signal, SIGTERM);
	assert_true(res.wall_ms < 1000);
	proc_result_release(&res);
	proc_test_no_pidfd(false);
}

/* What the program leaves behind in its group when it exits is killed with it. */
static void test_proc__leftovers_die_with_the_program(void **state)
{
	struct proc_result res;

	run_sh("sleep 60 >/dev/null 2>&1 & echo $!", 0, &res);
	assert_true(dies_within((pid_t)strtol(buf_cstr(&res.out), NULL, 10), 1000));
	assert_true(res.wall_ms < 1000);
	proc_result_release(&res);
}

/* A descendant that left the group keeps stdout open: the run ends the grace after the exit. */
static void test_proc__escaped_descendant_is_abandoned(void **state)
{
	char *argv[] = {"sh", "-c", "setsid sleep 1 & sleep 0.2; echo started", NULL};
	struct proc_spec spec = spec_of("/bin/sh", argv);
	struct proc_result res;

	spec.grace_ms = 200;
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_int_equal(res.exit_code, 0);
	assert_false(res.timed_out);
	assert_string_equal(buf_cstr(&res.out), "started\n");
	assert_true(res.wall_ms >= 400 && res.wall_ms < 900);
	proc_result_release(&res);
}

struct bg {
	pthread_t thread;
	struct proc_spec spec;
	struct proc_result res;
	int rc;
};

static void *bg_main(void *arg)
{
	struct bg *b = arg;

	b->rc = proc_run(&b->spec, &b->res, NULL);
	return NULL;
}

static char *sleep_argv[] = {"sleep", "60", NULL};

static void bg_start(struct bg *b, struct proc_group *g)
{
	b->spec = spec_of("/bin/sleep", sleep_argv);
	b->spec.timeout_ms = 10000;
	b->spec.group = g;
	assert_int_equal(pthread_create(&b->thread, NULL, bg_main, b), 0);
}

static void wait_running(struct proc_group *g, int n)
{
	int i;

	for (i = 0; i < 500 && proc_group_running(g) != n; i++)
		sleep_ms(2);
	assert_int_equal(proc_group_running(g), n);
}

static void test_proc__kill_all_stops_every_run(void **state)
{
	struct proc_group g;
	struct bg b[3];
	int i;

	proc_group_init(&g, 0);
	for (i = 0; i < 3; i++)
		bg_start(&b[i], &g);
	wait_running(&g, 3);
	assert_int_equal(proc_group_kill_all(&g), 3);
	assert_int_equal(proc_group_wait_idle(&g, clock_mono_ns() + 2 * CLOCK_NS_PER_SEC), 0);
	for (i = 0; i < 3; i++) {
		pthread_join(b[i].thread, NULL);
		assert_int_equal(b[i].rc, 0);
		assert_true(b[i].res.cancelled);
		assert_false(b[i].res.timed_out);
		assert_int_equal(b[i].res.term_signal, SIGTERM);
		assert_true(b[i].res.wall_ms < 2000);
		proc_result_release(&b[i].res);
	}
	assert_int_equal(proc_group_running(&g), 0);
	proc_group_release(&g);
}

/* A closed group starts nothing; a full one says so; both start again once open and free. */
static void test_proc__group_closed_and_full(void **state)
{
	char *argv[] = {"true", NULL};
	struct proc_spec spec = spec_of("/bin/true", argv);
	struct proc_group g;
	struct proc_result res;
	struct bg b;

	proc_group_init(&g, 1);
	spec.group = &g;
	proc_group_set_open(&g, false);
	assert_int_equal(proc_run(&spec, &res, NULL), -ECANCELED);
	proc_result_release(&res);
	proc_group_set_open(&g, true);
	bg_start(&b, &g);
	wait_running(&g, 1);
	assert_int_equal(proc_run(&spec, &res, NULL), -EBUSY);
	proc_result_release(&res);
	assert_int_equal(proc_group_wait_idle(&g, clock_mono_ns() + 20 * CLOCK_NS_PER_MS),
	                 -ETIMEDOUT);
	assert_int_equal(proc_group_kill_all(&g), 1);
	pthread_join(b.thread, NULL);
	assert_true(b.res.cancelled);
	proc_result_release(&b.res);
	assert_int_equal(proc_run(&spec, &res, NULL), 0);
	assert_int_equal(res.exit_code, 0);
	proc_result_release(&res);
	proc_group_release(&g);
}

static void count_changes(int running, void *ud)
{
	int *peak = ud;

	if (running > *peak)
		*peak = running;
}

/* With wait_slot, a run beyond the maximum waits for a slot (the count never passes it), and
 * starts once one is free; a group closed meanwhile cancels it. */
static void test_proc__a_run_waits_for_a_slot(void **state)
{
	struct proc_group g;
	struct bg first, second, third;
	int peak = 0;

	proc_group_init(&g, 1);
	g.on_change = count_changes;
	g.on_change_ud = &peak;
	bg_start(&first, &g);
	wait_running(&g, 1);
	second.spec = spec_of("/bin/sleep", sleep_argv);
	second.spec.timeout_ms = 10000;
	second.spec.group = &g;
	second.spec.wait_slot = true;
	assert_int_equal(pthread_create(&second.thread, NULL, bg_main, &second), 0);
	sleep_ms(50);
	assert_int_equal(proc_group_running(&g), 1);  /* waiting, not started, not refused */
	assert_int_equal(proc_group_kill_all(&g), 1); /* the first ends: the second starts */
	pthread_join(first.thread, NULL);
	wait_running(&g, 1);
	third = second;
	assert_int_equal(pthread_create(&third.thread, NULL, bg_main, &third), 0);
	for (int i = 0; i < 2500 && proc_group_waiting(&g) != 1; i++)
		sleep_ms(2);
	proc_group_set_open(&g, false); /* the third, still waiting, is cancelled */
	pthread_join(third.thread, NULL);
	assert_int_equal(third.rc, -ECANCELED);
	proc_group_kill_all(&g);
	pthread_join(second.thread, NULL);
	assert_int_equal(second.rc, 0);
	assert_true(second.res.cancelled);
	assert_int_equal(peak, 1);
	proc_result_release(&first.res);
	proc_result_release(&second.res);
	proc_result_release(&third.res);
	proc_group_release(&g);
}

struct worker {
	pthread_t thread;
	struct proc_group *g;
	int id;
	int failures;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char *argv[] = {"cat", NULL}, in[64];
	struct proc_spec spec = spec_of("/bin/cat", argv);
	struct proc_result res;
	int i;

	spec.group = w->g;
	for (i = 0; i < 10; i++) {
		snprintf(in, sizeof(in), "worker %d run %d\n", w->id, i);
		spec.input = in;
		spec.input_len = strlen(in);
		if (proc_run(&spec, &res, NULL) != 0 || res.exit_code != 0 ||
		    strcmp(buf_cstr(&res.out), in) != 0)
			w->failures++;
		proc_result_release(&res);
	}
	return NULL;
}

static void test_proc__four_threads_at_once(void **state)
{
	struct proc_group g;
	struct worker w[4];
	int i;

	proc_group_init(&g, 4);
	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){.g = &g, .id = i};
		assert_int_equal(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(w[i].thread, NULL);
		assert_int_equal(w[i].failures, 0);
	}
	assert_int_equal(proc_group_running(&g), 0);
	proc_group_release(&g);
}

struct starter {
	pthread_t thread;
	struct proc_group *g;
	int runs, bad;
};

/* Runs sleep 60 in @g until the group closes; every run must end cancelled, and soon. */
static void *starter_main(void *arg)
{
	struct starter *st = arg;
	struct proc_spec spec = spec_of("/bin/sleep", sleep_argv);
	struct proc_result res;
	int rc;

	spec.group = st->g;
	while ((rc = proc_run(&spec, &res, NULL)) != -ECANCELED) {
		st->runs++;
		if (rc != 0 || !res.cancelled || res.timed_out || res.wall_ms > 2000)
			st->bad++;
		proc_result_release(&res);
	}
	proc_result_release(&res);
	return NULL;
}

/* proc_group_kill_all() at any moment of a run's start: before fork(), before execve(), after. */
static void test_proc__kill_all_races_with_starts(void **state)
{
	struct proc_group g;
	struct starter st[4];
	int64_t end = clock_mono_ns() + 300 * CLOCK_NS_PER_MS;
	int i, runs = 0;

	proc_group_init(&g, 0);
	for (i = 0; i < 4; i++) {
		st[i] = (struct starter){.g = &g};
		assert_int_equal(pthread_create(&st[i].thread, NULL, starter_main, &st[i]), 0);
	}
	while (clock_mono_ns() < end) {
		proc_group_kill_all(&g);
		sleep_ms(1);
	}
	proc_group_set_open(&g, false);
	proc_group_kill_all(&g);
	for (i = 0; i < 4; i++) {
		pthread_join(st[i].thread, NULL);
		assert_int_equal(st[i].bad, 0);
		runs += st[i].runs;
	}
	assert_true(runs >= 4);
	assert_int_equal(proc_group_running(&g), 0);
	proc_group_release(&g);
}

/* PR_SET_PDEATHSIG: when the process that ran it dies, the program dies too. */
static void test_proc__program_dies_with_its_parent(void **state)
{
	char pidfile[] = "/tmp/landlord-test-proc-XXXXXX", line[32] = "";
	int fd = mkstemp(pidfile), status, i;
	pid_t runner, program = 0;
	FILE *f;

	assert_true(fd >= 0);
	close(fd);
	runner = fork();
	if (runner == 0) {
		char *argv[] = {"sh", "-c", "echo $$ > \"$0\"; exec sleep 60", pidfile, NULL};
		struct proc_spec spec = spec_of("/bin/sh", argv);
		struct proc_result res;

		spec.timeout_ms = 10000;
		proc_run(&spec, &res, NULL);
		_exit(0);
	}
	for (i = 0; i < 200 && program <= 0; i++) {
		sleep_ms(5);
		f = fopen(pidfile, "r");
		if (f && fgets(line, sizeof(line), f))
			program = (pid_t)strtol(line, NULL, 10);
		if (f)
			fclose(f);
	}
	assert_true(program > 0);
	kill(runner, SIGKILL);
	waitpid(runner, &status, 0);
	assert_true(dies_within(program, 1000));
	unlink(pidfile);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_proc__cat_echoes_stdin),
	        cmocka_unit_test(test_proc__exit_codes_and_signals),
	        cmocka_unit_test(test_proc__stdout_and_stderr_apart),
	        cmocka_unit_test(test_proc__output_over_the_cap_is_counted_and_dropped),
	        cmocka_unit_test(test_proc__tail_keeps_the_last_bytes),
	        cmocka_unit_test(test_proc__big_stdin_and_stdout_together),
	        cmocka_unit_test(test_proc__input_to_a_program_that_does_not_read_it),
	        cmocka_unit_test(test_proc__summary_and_ok),
	        cmocka_unit_test(test_proc__environment_is_exactly_the_one_given),
	        cmocka_unit_test(test_proc__inherited_fds_are_closed),
	        cmocka_unit_test(test_proc__signals_are_reset),
	        cmocka_unit_test(test_proc__own_process_group),
	        cmocka_unit_test(test_proc__cwd),
	        cmocka_unit_test(test_proc__exec_failure_is_not_an_exit_code),
	        cmocka_unit_test(test_proc__bad_specs),
	        cmocka_unit_test(test_proc__timeout_kills_the_group),
	        cmocka_unit_test(test_proc__timeout_escalates_to_sigkill),
	        cmocka_unit_test(test_proc__without_pidfd),
	        cmocka_unit_test(test_proc__leftovers_die_with_the_program),
	        cmocka_unit_test(test_proc__escaped_descendant_is_abandoned),
	        cmocka_unit_test(test_proc__kill_all_stops_every_run),
	        cmocka_unit_test(test_proc__group_closed_and_full),
	        cmocka_unit_test(test_proc__four_threads_at_once),
	        cmocka_unit_test(test_proc__a_run_waits_for_a_slot),
	        cmocka_unit_test(test_proc__kill_all_races_with_starts),
	        cmocka_unit_test(test_proc__program_dies_with_its_parent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
