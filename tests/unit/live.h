/*
 * live.h - helpers shared by the unit suites' live tests, which run against a real API server
 * when LANDLORD_TEST_KUBECONFIG is set (tests/e2e/test_library_live.py always sets it).
 * Header-only and static: each suite is its own executable.
 */
#ifndef LANDLORD_TESTS_LIVE_H
#define LANDLORD_TESTS_LIVE_H

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Six random hex digits, to keep names unique across runs sharing one cluster. */
static inline void live_rand_suffix(char *out, size_t len)
{
	unsigned int r = 0;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (unsigned int)getpid();
	snprintf(out, len, "%06x", r & 0xffffff);
}

/*
 * The control plane's state directory (tests/cluster/start.sh): @explicit_dir when set
 * ($LANDLORD_TEST_STATE_DIR), else STATE_DIR when the kubeconfig is STATE_DIR/kubeconfigs/x and
 * STATE_DIR/env exists; else "".
 */
static inline void live_state_dir(const char *kubeconfig, const char *explicit_dir, char *out,
                                  size_t len)
{
	char env[1024];
	char *slash;

	out[0] = '\0';
	if (explicit_dir && *explicit_dir) {
		snprintf(out, len, "%s", explicit_dir);
		return;
	}
	snprintf(out, len, "%s", kubeconfig);
	for (int i = 0; i < 2; i++) {
		slash = strrchr(out, '/');
		if (slash == NULL) {
			out[0] = '\0';
			return;
		}
		*slash = '\0';
	}
	snprintf(env, sizeof(env), "%s/env", out);
	if (access(env, R_OK) != 0)
		out[0] = '\0';
}

#endif
