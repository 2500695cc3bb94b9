/* proc.c - run a program with an argument vector, capped output and a time-out (see proc.h). */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/proc.h"

#define CHUNK        16384 /* bytes read from an output pipe per wake-up */
#define EXIT_POLL_MS 10    /* without pidfd: how often waitid() looks for the exit */

/* Where the child failed, carried to the parent over the report pipe. */
enum stage { STAGE_PDEATHSIG = 1, STAGE_PGROUP, STAGE_FDS, STAGE_CHDIR, STAGE_EXEC };

struct child_report {
	int stage;
	int err;
};

struct proc_slot {
	struct proc_slot *prev, *next;
	pid_t pid;      /* > 0 while it may be signalled: forked and not yet reaped */
	int wake_fd;    /* eventfd: proc_group_kill_all() wakes the run's poll() */
	bool cancelled; /* proc_group_kill_all() asked it to stop */
};

/* Everything the child needs, prepared before fork(): it calls only async-signal-safe code. */
struct child {
	const struct proc_spec *spec;
	char *const *envp;
	int fd[3];     /* its stdin, stdout, stderr (pipe ends, all above 2) */
	int report_fd; /* write end of the report pipe, close-on-exec */
	pid_t parent;
	int max_fd; /* without close_range(): close every fd below it */
	struct sigaction dfl;
	sigset_t empty;
};

/* One proc_run() in progress. fd[] are the parent's pipe ends, -1 once closed. */
struct run {
	const struct proc_spec *spec;
	struct proc_result *res;
	struct proc_slot slot;
	pid_t pid;
	int fd[3];
	int pidfd; /* -1: waitid() is polled instead */
	size_t in_off;
	int64_t deadline_ns, kill_at_ns, abandon_at_ns, grace_ns;
	bool term_sent, kill_sent, exited;
};

static char *const empty_env[] = {NULL};
/*
 * The kernel's struct sigaction all zero, whatever its layout: SIG_DFL, no flags, empty mask. For
 * the signals libc keeps to itself (32 and 33 in glibc), which its sigaction() refuses to touch
 * but which an ignoring parent would otherwise hand on, ignored, through execve().
 */
static const unsigned long kernel_sig_dfl[8];
static atomic_bool no_pidfd;

void proc_test_no_pidfd(bool on)
{
	atomic_store(&no_pidfd, on);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- the child, between fork() and execve(): async-signal-safe calls only ---- */

static void __attribute__((noreturn)) child_fail(int report_fd, enum stage stage, int e)
{
	struct child_report r = {.stage = stage, .err = e};
	ssize_t n = write(report_fd, &r, sizeof(r));

	(void)n;
	_exit(127);
}

/* Every fd above 3 (the report pipe, now at 3) closed: close_range(), else one by one. */
static void child_close_fds(int max_fd)
{
	int fd;

#ifdef SYS_close_range
	if (syscall(SYS_close_range, 4u, ~0u, 0u) == 0)
		return;
#endif
	for (fd = 4; fd < max_fd; fd++)
		close(fd);
}

/* stdin, stdout, stderr from the pipes; the report pipe moved to 3, close-on-exec. */
static int child_fds(const struct child *c)
{
	int i;

	for (i = 0; i < 3; i++)
		if (dup2(c->fd[i], i) < 0)
			return -1;
	if (c->report_fd != 3 && (dup2(c->report_fd, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0))
		return -1;
	child_close_fds(c->max_fd);
	return 0;
}

static void __attribute__((noreturn)) child_exec(const struct child *c)
{
	int sig;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		child_fail(c->report_fd, STAGE_PDEATHSIG, errno);
	if (getppid() != c->parent) /* the parent died before prctl() took */
		_exit(127);
	if (setpgid(0, 0) != 0)
		child_fail(c->report_fd, STAGE_PGROUP, errno);
	for (sig = 1; sig < NSIG; sig++) /* all blocked since before fork() */
		if (sig != SIGKILL && sig != SIGSTOP && sigaction(sig, &c->dfl, NULL) != 0)
			syscall(SYS_rt_sigaction, sig, kernel_sig_dfl, NULL, (NSIG - 1) / 8);
	if (child_fds(c) != 0)
		child_fail(c->report_fd, STAGE_FDS, errno);
	if (c->spec->cwd && chdir(c->spec->cwd) != 0)
		child_fail(3, STAGE_CHDIR, errno);
	sigprocmask(SIG_SETMASK, &c->empty, NULL);
	execve(c->spec->path, c->spec->argv, c->envp);
	child_fail(3, STAGE_EXEC, errno);
}

/* ---- the parent: spawning ---- */

static int ms_until(int64_t deadline_ns, int64_t now);

/* Keep pipe ends off 0-2, so that the child's dup2() onto 0-2 never clobbers one. */
static int lift_fd(int *fd)
{
	int n;

	if (*fd > 2)
		return 0;
	n = fcntl(*fd, F_DUPFD_CLOEXEC, 3);
	if (n < 0)
		return -errno;
	close(*fd);
	*fd = n;
	return 0;
}

static int open_pipe(int p[2])
{
	int rc;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	rc = lift_fd(&p[0]);
	if (rc == 0)
		rc = lift_fd(&p[1]);
	return rc;
}

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* The pipes: the child's ends into @c, the parent's (non-blocking) into @r. */
static int make_pipes(struct run *r, struct child *c, int report[2])
{
	int p[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
	int i, rc = 0;

	for (i = 0; i < 3 && rc == 0; i++)
		rc = open_pipe(p[i]);
	if (rc == 0)
		rc = open_pipe(report);
	for (i = 0; i < 3; i++) { /* stdin: the child reads p[0][0]; out, err: it writes [1] */
		c->fd[i] = p[i][i == 0 ? 0 : 1];
		r->fd[i] = p[i][i == 0 ? 1 : 0];
		if (rc == 0 && r->fd[i] >= 0)
			rc = nonblock(r->fd[i]);
	}
	return rc;
}

static void child_init(struct child *c, const struct proc_spec *spec)
{
	struct rlimit rl;

	memset(c, 0, sizeof(*c));
	c->spec = spec;
	c->envp = spec->envp ? spec->envp : empty_env;
	c->parent = getpid();
	c->max_fd = 65536;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		c->max_fd = rl.rlim_cur > INT_MAX ? INT_MAX : (int)rl.rlim_cur;
	c->dfl.sa_handler = SIG_DFL;
	sigemptyset(&c->dfl.sa_mask);
	sigemptyset(&c->empty);
}

static void slot_set_pid(struct run *r, pid_t pid)
{
	struct proc_group *g = r->spec->group;

	if (!g) {
		r->slot.pid = pid;
		return;
	}
	pthread_mutex_lock(&g->lock);
	r->slot.pid = pid;
	if (pid == 0 && r->slot.cancelled && !r->res->timed_out)
		r->res->cancelled = true;
	pthread_mutex_unlock(&g->lock);
}

static const char *stage_name(int stage)
{
	switch (stage) {
	case STAGE_PDEATHSIG:
		return "prctl(PR_SET_PDEATHSIG)";
	case STAGE_PGROUP:
		return "setpgid";
	case STAGE_FDS:
		return "dup2";
	case STAGE_CHDIR:
		return "chdir";
	default:
		return "execve";
	}
}

/* Reap the child, which has exited (or will at once); record how. */
static void reap(struct run *r)
{
	int status = 0;
	pid_t got;

	slot_set_pid(r, 0); /* from here its pid may be reused: signal it no more */
	do
		got = waitpid(r->pid, &status, 0);
	while (got < 0 && errno == EINTR);
	r->exited = true;
	if (got != r->pid)
		return;
	if (WIFEXITED(status))
		r->res->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		r->res->term_signal = WTERMSIG(status);
}

/*
 * Whether the child got to execve(): EOF on the report pipe; else reap it and say why not. A
 * child stuck before execve() (a hung chdir()) is left to the run's time-out.
 */
static int await_exec(struct run *r, int report_fd, struct ll_err *err)
{
	struct pollfd p = {.fd = report_fd, .events = POLLIN};
	struct child_report rep;
	ssize_t n = -1;
	int ready;

	do
		ready = poll(&p, 1, ms_until(r->deadline_ns, clock_mono_ns()));
	while (ready < 0 && errno == EINTR);
	while (ready > 0 && (n = read(report_fd, &rep, sizeof(rep))) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(rep))
		return 0;
	reap(r);
	r->res->exit_code = -1; /* the set-up's _exit(127), not the program's */
	if (rep.err <= 0)
		rep.err = EIO;
	return ll_err_set(err, -rep.err, "%s: %s: %s", r->spec->path, stage_name(rep.stage),
	                  strerror(rep.err));
}

/* fork() with every signal blocked, so that no handler of ours runs in the child. */
static pid_t fork_child(const struct child *c)
{
	sigset_t all, old;
	pid_t pid;
	int e;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (pid == 0)
		child_exec(c);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return pid;
}

static int spawn(struct run *r, struct ll_err *err)
{
	int report[2] = {-1, -1};
	struct child c;
	int i, rc;

	child_init(&c, r->spec);
	rc = make_pipes(r, &c, report);
	if (rc) {
		ll_err_set(err, rc, "%s: pipe: %s", r->spec->path, strerror(-rc));
		goto out;
	}
	c.report_fd = report[1];
	r->pid = fork_child(&c);
	if (r->pid < 0) {
		rc = ll_err_set(err, -errno, "%s: fork: %s", r->spec->path, strerror(errno));
		r->pid = 0; /* never kill(-(-1)) */
		goto out;
	}
	setpgid(r->pid, r->pid); /* as the child does: the group exists before we signal it */
	slot_set_pid(r, r->pid);
	close_fd(&report[1]);
	for (i = 0; i < 3; i++)
		close_fd(&c.fd[i]);
	rc = await_exec(r, report[0], err);
#ifdef SYS_pidfd_open
	if (rc == 0 && !atomic_load(&no_pidfd))
		r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
#endif
out:
	close_fd(&report[0]);
	close_fd(&report[1]);
	for (i = 0; i < 3; i++)
		close_fd(&c.fd[i]);
	return rc;
}

/* ---- the parent: input, output, time ---- */

static void pump_input(struct run *r)
{
	const char *in = r->spec->input;
	ssize_t n;

	while (r->in_off < r->spec->input_len) {
		n = write(r->fd[0], in + r->in_off, r->spec->input_len - r->in_off);
		if (n > 0)
			r->in_off += (size_t)n;
		else if (n < 0 && errno == EAGAIN)
			return;
		else if (!(n < 0 && errno == EINTR))
			break; /* EPIPE: the program will not read the rest */
	}
	close_fd(&r->fd[0]);
}

/* Keep @n more bytes of a stream in @b: the first max bytes, or with @tail the last. */
static void keep(struct buf *b, bool tail, const char *p, size_t n)
{
	if (tail && n >= b->max) {
		buf_reset(b);
		p += n - b->max;
		n = b->max;
	} else if (tail && n > b->max - b->len) {
		buf_consume(b, n - (b->max - b->len));
	} else if (n > b->max - b->len) {
		n = b->max - b->len;
	}
	if (n)
		buf_append(b, p, n); /* fits: cannot fail */
}

/* One read from output pipe @i (1 or 2): kept up to the cap, counted beyond it. */
static void drain(struct run *r, int i)
{
	struct proc_result *res = r->res;
	char chunk[CHUNK];
	ssize_t n;

	n = read(r->fd[i], chunk, sizeof(chunk));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close_fd(&r->fd[i]);
		return;
	}
	if (i == 1) {
		keep(&res->out, r->spec->out_tail, chunk, (size_t)n);
		res->out_total += (size_t)n;
		res->out_truncated = res->out_total > res->out.len;
	} else {
		keep(&res->err, r->spec->err_tail, chunk, (size_t)n);
		res->err_total += (size_t)n;
		res->err_truncated = res->err_total > res->err.len;
	}
}

static bool slot_cancelled(struct run *r)
{
	struct proc_group *g = r->spec->group;
	bool c;

	if (!g)
		return false;
	pthread_mutex_lock(&g->lock);
	c = r->slot.cancelled;
	pthread_mutex_unlock(&g->lock);
	return c;
}

/* The time-out or a cancellation: SIGTERM to the group, then SIGKILL after the grace. */
static void escalate(struct run *r, int64_t now)
{
	bool late;

	if (r->exited)
		return;
	if (!r->term_sent) {
		late = now >= r->deadline_ns;
		if (!late && !slot_cancelled(r))
			return;
		r->res->timed_out = late;
		kill(-r->pid, SIGTERM);
		r->term_sent = true;
		r->kill_at_ns = now + r->grace_ns;
	}
	if (!r->kill_sent && now >= r->kill_at_ns) {
		kill(-r->pid, SIGKILL);
		r->kill_sent = true;
	}
}

/* poll()'s time-out in ms until the monotonic @deadline_ns: 0 once past, -1 for INT64_MAX. */
static int ms_until(int64_t deadline_ns, int64_t now)
{
	int64_t ms;

	if (deadline_ns == INT64_MAX)
		return -1;
	if (deadline_ns <= now)
		return 0;
	ms = (deadline_ns - now + CLOCK_NS_PER_MS - 1) / CLOCK_NS_PER_MS;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* poll()'s time-out in the run loop: until the next deadline of the run's state. */
static int poll_ms(const struct run *r, int64_t now)
{
	int64_t next = INT64_MAX;

	if (r->exited)
		next = r->abandon_at_ns;
	else if (!r->term_sent)
		next = r->deadline_ns;
	else if (!r->kill_sent)
		next = r->kill_at_ns;
	if (!r->exited && r->pidfd < 0 && next > now + EXIT_POLL_MS * CLOCK_NS_PER_MS)
		next = now + EXIT_POLL_MS * CLOCK_NS_PER_MS;
	return ms_until(next, now);
}

static bool leader_gone(struct run *r, short pidfd_events)
{
	siginfo_t si;

	if (r->pidfd >= 0)
		return pidfd_events != 0;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
		return errno == ECHILD;
	return si.si_pid != 0;
}

/*
 * The program exited: what it left in its group is killed while its zombie still holds the
 * group's id, then it is reaped; the output pipes get the grace to reach EOF.
 */
static void leader_exited(struct run *r)
{
	kill(-r->pid, SIGKILL);
	reap(r);
	close_fd(&r->fd[0]);
	r->abandon_at_ns = clock_mono_ns() + r->grace_ns;
}

static void wake_drain(struct run *r)
{
	eventfd_t v;

	if (r->slot.wake_fd >= 0)
		eventfd_read(r->slot.wake_fd, &v);
}

/* Until the program has exited and its output pipes closed (or the grace for them passed). */
static void run_loop(struct run *r)
{
	struct pollfd p[5];
	int64_t now;
	int i;

	for (;;) {
		now = clock_mono_ns();
		escalate(r, now);
		if (r->exited && ((r->fd[1] < 0 && r->fd[2] < 0) || now >= r->abandon_at_ns))
			break;
		p[0] = (struct pollfd){.fd = r->fd[0], .events = POLLOUT};
		p[1] = (struct pollfd){.fd = r->fd[1], .events = POLLIN};
		p[2] = (struct pollfd){.fd = r->fd[2], .events = POLLIN};
		p[3] = (struct pollfd){.fd = r->exited ? -1 : r->pidfd, .events = POLLIN};
		p[4] = (struct pollfd){.fd = r->slot.wake_fd, .events = POLLIN};
		if (poll(p, 5, poll_ms(r, now)) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			pump_input(r);
		for (i = 1; i < 3; i++)
			if (p[i].revents)
				drain(r, i);
		if (p[4].revents)
			wake_drain(r);
		if (!r->exited && leader_gone(r, p[3].revents))
			leader_exited(r);
	}
	if (!r->exited) { /* poll() failed: do not leave it running */
		kill(-r->pid, SIGKILL);
		leader_exited(r);
	}
}

/* ---- groups ---- */

static int group_enter(struct run *r, struct ll_err *err)
{
	struct proc_group *g = r->spec->group;
	int rc = 0;

	if (!g)
		return 0;
	r->slot.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->slot.wake_fd < 0)
		return ll_err_set(err, -errno, "%s: eventfd: %s", r->spec->path, strerror(errno));
	pthread_mutex_lock(&g->lock);
	while (r->spec->wait_slot && !g->closed && g->max_running > 0 &&
	       g->running >= g->max_running) {
		g->waiting++;
		pthread_cond_wait(&g->idle, &g->lock);
		g->waiting--;
	}
	if (g->closed)
		rc = ll_err_set(err, -ECANCELED, "%s: not started: its group is closed",
		                r->spec->path);
	else if (g->max_running > 0 && g->running >= g->max_running)
		rc = ll_err_set(err, -EBUSY, "%s: not started: %d programs run already",
		                r->spec->path, g->running);
	if (rc == 0) {
		r->slot.next = g->slots;
		if (g->slots)
			g->slots->prev = &r->slot;
		g->slots = &r->slot;
		g->running++;
		if (g->on_change)
			g->on_change(g->running, g->on_change_ud);
	}
	pthread_mutex_unlock(&g->lock);
	if (rc)
		close_fd(&r->slot.wake_fd);
	return rc;
}

static void group_leave(struct run *r)
{
	struct proc_group *g = r->spec->group;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	if (r->slot.prev)
		r->slot.prev->next = r->slot.next;
	else
		g->slots = r->slot.next;
	if (r->slot.next)
		r->slot.next->prev = r->slot.prev;
	g->running--;
	if (g->on_change)
		g->on_change(g->running, g->on_change_ud);
	pthread_cond_broadcast(&g->idle);
	pthread_mutex_unlock(&g->lock);
	close_fd(&r->slot.wake_fd);
}

void proc_group_init(struct proc_group *g, int max_running)
{
	pthread_mutex_init(&g->lock, NULL);
	clock_cond_init(&g->idle);
	g->slots = NULL;
	g->running = 0;
	g->waiting = 0;
	g->max_running = max_running;
	g->closed = false;
	g->on_change = NULL;
	g->on_change_ud = NULL;
}

void proc_group_release(struct proc_group *g)
{
	assert(g->running == 0 && g->waiting == 0 && !g->slots);
	pthread_cond_destroy(&g->idle);
	pthread_mutex_destroy(&g->lock);
}

int proc_group_running(struct proc_group *g)
{
	int n;

	pthread_mutex_lock(&g->lock);
	n = g->running;
	pthread_mutex_unlock(&g->lock);
	return n;
}

int proc_group_waiting(struct proc_group *g)
{
	int n;

	pthread_mutex_lock(&g->lock);
	n = g->waiting;
	pthread_mutex_unlock(&g->lock);
	return n;
}

void proc_group_set_open(struct proc_group *g, bool open)
{
	pthread_mutex_lock(&g->lock);
	g->closed = !open;
	pthread_cond_broadcast(&g->idle); /* runs waiting for a slot see it */
	pthread_mutex_unlock(&g->lock);
}

int proc_group_kill_all(struct proc_group *g)
{
	struct proc_slot *s;
	int n = 0;

	pthread_mutex_lock(&g->lock);
	for (s = g->slots; s; s = s->next) {
		s->cancelled = true;
		if (s->pid > 0)
			kill(-s->pid, SIGTERM);
		eventfd_write(s->wake_fd, 1);
		n++;
	}
	pthread_mutex_unlock(&g->lock);
	return n;
}

int proc_group_wait_idle(struct proc_group *g, int64_t deadline_ns)
{
	int rc = 0;

	pthread_mutex_lock(&g->lock);
	while (g->running > 0 && rc == 0)
		if (clock_cond_wait_until(&g->idle, &g->lock, deadline_ns) == ETIMEDOUT)
			rc = -ETIMEDOUT;
	if (g->running == 0)
		rc = 0;
	pthread_mutex_unlock(&g->lock);
	return rc;
}

/* ---- proc_run ---- */

static int check_spec(const struct proc_spec *spec, struct ll_err *err)
{
	const char *path = spec->path ? spec->path : "(null)";

	if (!spec->path || spec->path[0] != '/')
		return ll_err_set(err, -EINVAL, "%s: not an absolute path", path);
	if (!spec->argv || !spec->argv[0])
		return ll_err_set(err, -EINVAL, "%s: no argv[0]", path);
	if (spec->timeout_ms <= 0)
		return ll_err_set(err, -EINVAL, "%s: no time-out", path);
	if (spec->input_len && !spec->input)
		return ll_err_set(err, -EINVAL, "%s: input_len without input", path);
	return 0;
}

static void run_init(struct run *r, const struct proc_spec *spec, struct proc_result *res)
{
	int64_t grace_ms = spec->grace_ms > 0 ? spec->grace_ms : PROC_GRACE_MS_DEFAULT;

	memset(r, 0, sizeof(*r));
	r->spec = spec;
	r->res = res;
	r->slot.wake_fd = -1;
	r->fd[0] = r->fd[1] = r->fd[2] = r->pidfd = -1;
	r->grace_ns = grace_ms * CLOCK_NS_PER_MS;
	r->deadline_ns = clock_mono_ns() + spec->timeout_ms * CLOCK_NS_PER_MS;
	r->kill_at_ns = r->abandon_at_ns = INT64_MAX;
}

/* SIGPIPE blocked in this thread for the run; one it raised is consumed at the end. */
static bool sigpipe_block(sigset_t *saved)
{
	sigset_t s, pending;

	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &s, saved);
	sigpending(&pending);
	return sigismember(&pending, SIGPIPE) == 1;
}

static void sigpipe_restore(const sigset_t *saved, bool was_pending)
{
	sigset_t s, pending;
	struct timespec zero = {0, 0};

	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	sigpending(&pending);
	if (!was_pending && sigismember(&pending, SIGPIPE) == 1)
		sigtimedwait(&s, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

int proc_run(const struct proc_spec *spec, struct proc_result *res, struct ll_err *err)
{
	struct run r;
	sigset_t saved;
	bool pending;
	int64_t t0 = clock_mono_ns();
	int i, rc;

	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	buf_init(&res->out, spec->out_max ? spec->out_max : PROC_OUTPUT_MAX);
	buf_init(&res->err, spec->err_max ? spec->err_max : PROC_OUTPUT_MAX);
	run_init(&r, spec, res);
	rc = check_spec(spec, err);
	if (rc == 0)
		rc = group_enter(&r, err);
	if (rc)
		return rc;
	pending = sigpipe_block(&saved);
	rc = spawn(&r, err);
	if (rc == 0) {
		if (!spec->input_len)
			close_fd(&r.fd[0]);
		run_loop(&r);
	}
	sigpipe_restore(&saved, pending);
	res->wall_ms = (clock_mono_ns() - t0) / CLOCK_NS_PER_MS;
	group_leave(&r);
	for (i = 0; i < 3; i++)
		close_fd(&r.fd[i]);
	close_fd(&r.pidfd);
	return rc;
}

void proc_result_release(struct proc_result *res)
{
	buf_release(&res->out);
	buf_release(&res->err);
}

bool proc_result_ok(const struct proc_result *res)
{
	return res->exit_code == 0 && !res->timed_out && !res->cancelled;
}

const char *proc_result_summary(const struct proc_result *res, char out[PROC_SUMMARY_MAX])
{
	const char *sig = res->term_signal ? sigabbrev_np(res->term_signal) : NULL;
	const char *why = res->timed_out ? ", timed out" : res->cancelled ? ", cancelled" : "";
	const char *cut = res->out_truncated || res->err_truncated ? ", output truncated" : "";

	if (res->exit_code >= 0)
		snprintf(out, PROC_SUMMARY_MAX, "exit status %d%s%s after %lld ms", res->exit_code,
		         why, cut, (long long)res->wall_ms);
	else if (res->term_signal)
		snprintf(out, PROC_SUMMARY_MAX, "killed by SIG%s%s%s after %lld ms",
		         sig ? sig : "?", why, cut, (long long)res->wall_ms);
	else
		snprintf(out, PROC_SUMMARY_MAX, "not run");
	return out;
}
