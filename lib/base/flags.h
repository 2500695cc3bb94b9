/*
 * flags.h - command-line flags and their environment variables, declared once in a table.
 *
 * A program lists its options as rows of struct flag: the name, the environment variable, the
 * type, the default, the help text and where the value goes (an offset into the program's own
 * configuration struct). flags_parse() applies the defaults, then the environment, then the
 * command line, so a flag given on the command line wins over its variable (whose value is then
 * not even checked); flags_usage() prints the help from the same rows. Adding an option is one row.
 *
 * Values are checked by type: booleans are true/false/1/0; integers are decimal within
 * [min, max]; durations are a decimal number (a fraction allowed) with a unit, ms, s, m or h, or
 * a bare number of seconds, and must fit in a long of milliseconds; host:port takes an empty
 * host as 127.0.0.1 and a port 0..65535. A bad value is one line naming the flag (or the
 * variable) and the value, and an error.
 * String values point into argv or the environment (they live as long as the process).
 */
#ifndef LANDLORD_FLAGS_H
#define LANDLORD_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct ll_err;

enum flag_type {
	FLAG_STRING,   /* const char * */
	FLAG_BOOL,     /* bool; "--flag VALUE" */
	FLAG_SWITCH,   /* bool; "--flag" alone sets it (its variable takes true/false) */
	FLAG_INT,      /* long, within [min, max] */
	FLAG_DURATION, /* long, milliseconds */
	FLAG_HOSTPORT, /* char[FLAGS_HOST_MAX] at offset, int port at offset2 */
	FLAG_LIST,     /* const char *[FLAGS_LIST_MAX + 1] at offset (NULL-terminated), size_t count
	                * at offset2: each "--flag VALUE" adds one; no variable, no default */
};

#define FLAGS_HOST_MAX 64
#define FLAGS_LIST_MAX 32

struct flag {
	const char *name; /* without the dashes: "probe-addr" */
	const char *env;  /* "LANDLORD_PROBE_ADDR", or NULL for none */
	enum flag_type type;
	const char *arg;  /* the value's name in the help, e.g. "HOST:PORT" */
	const char *dflt; /* parsed like a given value before anything else; NULL: none */
	const char *help; /* one or more sentences; wrapped by flags_usage() */
	size_t offset;    /* where the value goes in the caller's struct */
	size_t offset2;   /* FLAG_HOSTPORT: where the port goes; FLAG_LIST: the count */
	long min, max;    /* FLAG_INT: the accepted range */
};

/**
 * flags_parse() - fill @out from the table: defaults, then environment variables, then
 * @argv[@first..argc). Stops at "--help" (returns 1).
 * Return: 0; 1 when --help was given; -EINVAL for an unknown flag, a missing or bad value, or
 * an argument that is not a flag (@err names it).
 */
int flags_parse(const struct flag *table, size_t n, int argc, char **argv, int first, void *out,
                struct ll_err *err);

/** flags_usage() - the flags' help: "  --name ARG   help [ENV] (default)", wrapped at 100. */
void flags_usage(const struct flag *table, size_t n, FILE *f);

/**
 * flags_parse_duration_ms() - "15s", "500ms", "1.5m", "1h" or "30" (seconds) into *@ms.
 * Return: 0; -EINVAL for anything else (negative, nan, inf, a unit it does not know);
 * -ERANGE when it does not fit in a long of milliseconds.
 */
int flags_parse_duration_ms(const char *s, long *ms /* OUT */);

#endif
