/*
 * fuzz_flags.c - the flags parser on any command line and environment value: it returns 0, 1
 * (--help) or -EINVAL with a one-line message; values it accepts are within their declared
 * range; a duration it accepts is never negative and, for a plain "<digits><unit>", equals the
 * product computed here independently. Input: arguments separated by NUL bytes; the first one is
 * also tried as a duration on its own.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/flags.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct opts {
	const char *name;
	bool on, sw;
	long n, wait_ms;
	char host[FLAGS_HOST_MAX];
	int port;
};

#define AT(f) offsetof(struct opts, f)
static const struct flag TABLE[] = {
        {.name = "name", .type = FLAG_STRING, .offset = AT(name)},
        {.name = "on", .type = FLAG_BOOL, .dflt = "false", .offset = AT(on)},
        {.name = "sw", .type = FLAG_SWITCH, .offset = AT(sw)},
        {.name = "n", .type = FLAG_INT, .dflt = "5", .offset = AT(n), .min = 1, .max = 10},
        {.name = "wait", .type = FLAG_DURATION, .dflt = "15s", .offset = AT(wait_ms)},
        {.name = "addr",
         .type = FLAG_HOSTPORT,
         .dflt = "127.0.0.1:80",
         .offset = AT(host),
         .offset2 = AT(port)},
};
#define N        (sizeof(TABLE) / sizeof(TABLE[0]))
#define MAX_ARGS 16

/* "<1-9 digits><unit>" computed without the parser; -1 for anything else. */
static long simple_duration(const char *s)
{
	static const struct {
		const char *unit;
		long ms;
	} units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"", 1000}};
	size_t digits = strspn(s, "0123456789");

	if (digits == 0 || digits > 9)
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(s + digits, units[i].unit) == 0)
			return strtol(s, NULL, 10) * units[i].ms;
	return -1;
}

static void check_duration(const char *s)
{
	long ms = -1, want = simple_duration(s);
	int rc = flags_parse_duration_ms(s, &ms);

	if (rc != 0 && rc != -EINVAL && rc != -ERANGE)
		abort();
	if (rc == 0 && ms < 0)
		abort();
	if (want >= 0 && (rc != 0 || ms != want))
		abort();
}

static void check_parse(int argc, char **argv)
{
	struct opts o = {0};
	struct ll_err err = {{0}};
	int rc = flags_parse(TABLE, N, argc, argv, 1, &o, &err);

	if (rc == -EINVAL && err.msg[0] == '\0')
		abort();
	if (rc != 0 && rc != 1 && rc != -EINVAL)
		abort();
	if (rc == 0 && (o.n < 1 || o.n > 10 || o.wait_ms < 0 || o.port < 0 || o.port > 65535 ||
	                memchr(o.host, '\0', sizeof(o.host)) == NULL))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size + 1), *argv[MAX_ARGS + 1] = {"prog"};
	int argc = 1;

	memcpy(copy, data, size);
	copy[size] = '\0';
	check_duration(copy);
	for (char *p = copy; p < copy + size && argc < MAX_ARGS; p += strlen(p) + 1)
		argv[argc++] = p;
	check_parse(argc, argv);
	free(copy);
	return 0;
}
