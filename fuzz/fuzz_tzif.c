/*
 * fuzz_tzif.c - any bytes are a zone or refused with one printable line, without crashing; in a
 * zone, the period at an instant holds it, is never empty, meets its neighbours and has an
 * offset within TZ_UTOFF_MAX; tz_local_reached() grows exactly with the wall clock
 * (reached(t + 1) = max(reached(t), t + 1 + utoff(t + 1))); tz_local_first(L) is the first
 * instant whose wall clock shows L or later; the two agree (first(reached(t)) <= t <
 * first(reached(t) + 1)).
 * Input: a TZif file.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/err.h"
#include "tenancy/tzif.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_message(const char *msg)
{
	if (msg[0] == '\0')
		abort();
	for (const char *p = msg; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			abort();
}

static int64_t wall(const struct tz_zone *z, int64_t t)
{
	return t + tz_utoff_at(z, t);
}

static bool same(const struct tz_period *a, const struct tz_period *b)
{
	return a->start == b->start && a->end == b->end && a->utoff == b->utoff &&
	       a->isdst == b->isdst;
}

static void check_period(const struct tz_zone *z, int64_t t)
{
	struct tz_period p, q;

	tz_period_at(z, t, &p);
	if (p.start > t || (t >= p.end && p.end != INT64_MAX) || p.utoff > TZ_UTOFF_MAX ||
	    p.utoff < -TZ_UTOFF_MAX)
		abort();
	if (p.start != INT64_MIN) {
		tz_period_at(z, p.start, &q);
		if (!same(&p, &q))
			abort();
		tz_period_at(z, p.start - 1, &q);
		if (q.end != p.start)
			abort();
	}
	if (p.end != INT64_MAX) {
		tz_period_at(z, p.end, &q);
		if (q.start != p.end)
			abort();
	}
}

/* Wall-clock checks at @t, within +-2^61 so that nothing is clamped. */
static void check_wall(const struct tz_zone *z, int64_t t)
{
	int64_t first = tz_local_first(z, t), reached = tz_local_reached(z, t);
	int64_t next = tz_local_reached(z, t + 1), w = wall(z, t + 1);

	if (wall(z, first) < t || wall(z, first - 1) >= t)
		abort();
	if (reached < wall(z, t) || next != (w > reached ? w : reached))
		abort();
	if (tz_local_first(z, reached) > t || tz_local_first(z, reached + 1) <= t)
		abort();
}

static void check_zone(const struct tz_zone *z)
{
	static const int64_t instants[] = {
	        INT64_MIN,
	        INT64_MIN + 1,
	        -(INT64_C(1) << 59),
	        TZ_TIME_MIN - 1,
	        TZ_TIME_MIN,
	        -2208988800,
	        -1,
	        0,
	        1774746000,
	        2147483647,
	        2147483648,
	        3786825600,
	        INT64_C(1) << 33,
	        TZ_TIME_MAX,
	        TZ_TIME_MAX + 1,
	        INT64_C(1) << 61,
	        INT64_MAX - 1,
	        INT64_MAX,
	};
	static const int64_t walks[] = {-2208988800, 1767225600, 3786825600, TZ_TIME_MAX - 86400};

	for (size_t i = 0; i < sizeof(instants) / sizeof(instants[0]); i++) {
		check_period(z, instants[i]);
		if (instants[i] > -(INT64_C(1) << 61) && instants[i] < INT64_C(1) << 61)
			check_wall(z, instants[i]);
	}
	/* the first periods after a few instants, at their ends */
	for (size_t i = 0; i < sizeof(walks) / sizeof(walks[0]); i++) {
		struct tz_period p;
		int64_t t = walks[i];

		for (int k = 0; k < 24; k++) {
			tz_period_at(z, t, &p);
			if (p.end == INT64_MAX || p.end > INT64_C(1) << 60)
				break;
			t = p.end;
			check_period(z, t);
			check_wall(z, t - 1);
			check_wall(z, t);
			check_wall(z, wall(z, t));
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tz_zone *z = NULL, *again = NULL;
	struct ll_err err;
	int rc = tz_parse(data, size, &z, &err);

	if (tz_parse(data, size, &again, NULL) != rc)
		abort();
	if (rc != 0) {
		if (z != NULL || again != NULL)
			abort();
		check_message(err.msg);
		return 0;
	}
	check_zone(z);
	if (tz_utoff_at(z, 1774746000) != tz_utoff_at(again, 1774746000))
		abort();
	tz_free(z);
	tz_free(again);
	return 0;
}
