/*
 * nsreserve.c - reservation slots: when they expire, and a data map without the expired ones.
 */
#include <errno.h>
#include <stdlib.h>

#include "tenancy/nsreserve.h"

int64_t nsr_slot_time(const char *taken)
{
	char *end;
	long long t;

	if (taken == NULL || *taken < '0' || *taken > '9')
		return -1;
	errno = 0;
	t = strtoll(taken, &end, 10);
	return errno || *end ? -1 : (int64_t)t;
}

bool nsr_expired(const char *taken, int64_t now)
{
	int64_t t = nsr_slot_time(taken);

	return t < 0 || now - t >= RESERVATION_TTL_S || t - now > RESERVATION_TTL_S;
}

json_t *nsr_prune(const json_t *data, int64_t now, int64_t *next_expiry)
{
	json_t *out = json_object(), *v;
	const char *ns;

	*next_expiry = 0;
	json_object_foreach((json_t *)data, ns, v) {
		const char *taken = json_string_value(v);
		int64_t expiry = nsr_slot_time(taken) + RESERVATION_TTL_S;

		if (nsr_expired(taken, now))
			continue;
		json_object_set(out, ns, v);
		if (*next_expiry == 0 || expiry < *next_expiry)
			*next_expiry = expiry;
	}
	return out;
}
