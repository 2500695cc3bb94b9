/*
 * proc.h - run a program: an argument vector, no shell, capped output, a time-out.
 *
 * For the few external programs landlord runs (helm). proc_run() starts @path by execve(): no
 * shell, no PATH search, and exactly the environment the caller lists (nothing is inherited).
 * Secrets go through @input (the program's stdin) or files of mode 0600, never through the
 * argument vector or the environment, which other local users can read in /proc.
 *
 * What the child is given, always: stdin a pipe that carries @input and is then closed (EOF at
 * once without input); stdout and stderr pipes to the caller; no other descriptor (every fd above
 * 2 is closed before exec); the default signal dispositions and an empty signal mask; a process
 * group of its own; PR_SET_PDEATHSIG(SIGKILL), so that it dies with the thread that ran it
 * (proc_run() waits for it, so that thread outlives the run; only the program itself is covered,
 * not children it starts).
 *
 * Invariants:
 * - Output is capped: stdout and stderr are kept up to their caps (PROC_OUTPUT_MAX by default);
 *   later bytes are read, counted and dropped, so a chatty program never blocks on a full pipe
 *   and never grows memory. Writing @input and reading output share one poll(), so a program
 *   that writes before it reads cannot deadlock the run.
 * - Nothing a run starts outlives it: at the time-out (or proc_group_kill_all()) the process
 *   group gets SIGTERM, then SIGKILL after the grace; when the program exits, whatever it left
 *   running in its process group gets SIGKILL. A descendant that left the group (setsid) is
 *   not followed; its hold on the output pipes is abandoned after the grace.
 * - The child is waited for by its pid only (pidfd_open() and poll() where the kernel has them,
 *   else waitid() polled every 10 ms); no SIGCHLD handler is installed. The rest of the process
 *   must not reap children it did not start (no waitpid(-1), SIGCHLD not SIG_IGN).
 * - SIGPIPE from writing @input to a program that closed its stdin is blocked in the calling
 *   thread and consumed; it never reaches the process.
 *
 * Thread-safety: proc_run() may be called from many threads at once; a struct proc_group is
 * shared by them and all its functions are thread-safe. docs/internals/proc.md has the run's
 * states.
 */
#ifndef LANDLORD_PROC_H
#define LANDLORD_PROC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"

/* The default cap of each of stdout and stderr. */
#define PROC_OUTPUT_MAX (64u << 10)
/* The default time between SIGTERM and SIGKILL. */
#define PROC_GRACE_MS_DEFAULT 2000
/* Room for proc_result_summary()'s line and its NUL. */
#define PROC_SUMMARY_MAX 96

struct proc_slot; /* one run in a group, private to proc.c */

/*
 * A set of runs that can be counted and stopped together (a leader that loses its lease stops
 * every helm it started). Embedded by the caller: proc_group_init() ... proc_group_release().
 */
struct proc_group {
	pthread_mutex_t lock;
	pthread_cond_t idle; /* signalled when @running drops */
	struct proc_slot *slots;
	int running;
	int waiting; /* runs waiting for a slot (wait_slot) */
	int max_running;
	bool closed;
	/* optional: told the new count each time a run joins or leaves (under the group's lock:
	 * keep it quick, a gauge) */
	void (*on_change)(int running, void *ud);
	void *on_change_ud;
};

struct proc_spec {
	const char *path;         /* absolute path of the program */
	char *const *argv;        /* NULL-terminated, argv[0] included; borrowed */
	char *const *envp;        /* NULL-terminated: the whole environment; NULL for none */
	const char *cwd;          /* working directory; NULL to keep the caller's */
	const void *input;        /* written to stdin, then stdin is closed; NULL for none */
	size_t input_len;         /* bytes of @input */
	int64_t timeout_ms;       /* > 0: from the start to SIGTERM of the process group */
	int64_t grace_ms;         /* SIGTERM to SIGKILL; 0 for PROC_GRACE_MS_DEFAULT */
	size_t out_max;           /* bytes of stdout kept; 0 for PROC_OUTPUT_MAX */
	size_t err_max;           /* bytes of stderr kept; 0 for PROC_OUTPUT_MAX */
	bool out_tail;            /* over the cap, keep the last bytes of stdout, not the first */
	bool err_tail;            /* likewise for stderr (where a program's error usually is) */
	struct proc_group *group; /* optional: counted and stoppable with it */
	bool wait_slot;           /* with @group at its maximum: wait for a slot, not -EBUSY */
};

struct proc_result {
	int exit_code;      /* 0-255 when the program exited, else -1 */
	int term_signal;    /* the signal that ended it, else 0 */
	bool timed_out;     /* stopped because @timeout_ms passed */
	bool cancelled;     /* proc_group_kill_all() reached it while it ran */
	struct buf out;     /* stdout: its first (or last) out_max bytes; owned */
	struct buf err;     /* stderr, likewise */
	size_t out_total;   /* bytes the program wrote to stdout, kept or not */
	size_t err_total;   /* likewise for stderr */
	bool out_truncated; /* out_total > out.len: bytes were dropped */
	bool err_truncated;
	int64_t wall_ms; /* from the start to the end of the run */
};

/**
 * proc_run() - run @spec's program to its end and describe the run in @res.
 * @res is initialised on every path (release it with proc_result_release() whatever the return)
 * and filled when the program started.
 * Return: 0 when the program ran, whatever its exit status, time-out or cancellation (see @res);
 * -EINVAL for a bad @spec (relative path, no argv[0], timeout_ms <= 0); -ECANCELED when
 * @spec->group is closed and -EBUSY when it already runs its max_running (nothing started);
 * the errno of the child's set-up or execve() (-ENOENT, -EACCES, -ENOEXEC...), distinct from the
 * program's own failure, which is a non-zero exit_code; -errno when pipes or fork() fail.
 * @err gets one line on failure.
 */
int proc_run(const struct proc_spec *spec, struct proc_result *res /* OUT */, struct ll_err *err);
/** proc_result_release() - free @res's output buffers; safe to call twice. */
void proc_result_release(struct proc_result *res);
/** proc_result_ok() - the program exited 0 by itself: not timed out, not cancelled. */
bool proc_result_ok(const struct proc_result *res);
/**
 * proc_result_summary() - one line for logs and conditions: "exit status 1 after 230 ms",
 * "killed by SIGTERM, timed out after 30000 ms", "not run". Return: @out.
 */
const char *proc_result_summary(const struct proc_result *res,
                                char out[PROC_SUMMARY_MAX] /* OUT */);

/** proc_group_init() - an open, empty group; @max_running > 0 bounds its concurrent runs. */
void proc_group_init(struct proc_group *g, int max_running);
/**
 * proc_group_release() - free @g; no run may be in it or wait for a slot of it any more, nor
 * call proc_run() with it (proc_group_wait_idle() waits only for the runs in it).
 */
void proc_group_release(struct proc_group *g);
/** proc_group_running() - how many runs are in @g now (a gauge; stale once returned). */
int proc_group_running(struct proc_group *g);
/** proc_group_waiting() - how many runs wait for a slot of @g now (likewise). */
int proc_group_waiting(struct proc_group *g);
/**
 * proc_group_set_open() - while closed, proc_run() in @g starts nothing and returns -ECANCELED
 * (runs waiting for a slot, too).
 * Close, then proc_group_kill_all(): no run can start in between.
 */
void proc_group_set_open(struct proc_group *g, bool open);
/**
 * proc_group_kill_all() - stop every run in @g: SIGTERM to each process group now, SIGKILL
 * after each run's grace (its proc_run() sees to it, and reports cancelled). Runs started later
 * are not affected. Return: how many runs were told.
 */
int proc_group_kill_all(struct proc_group *g);
/**
 * proc_group_wait_idle() - wait until no run is in @g or the monotonic @deadline_ns passes.
 * Return: 0 when idle, -ETIMEDOUT.
 */
int proc_group_wait_idle(struct proc_group *g, int64_t deadline_ns);

/** proc_test_no_pidfd() - test-only: wait for children by polling waitid(), as without pidfd. */
void proc_test_no_pidfd(bool on);

#endif
