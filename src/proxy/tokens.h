/*
 * tokens.h - bearer-token authentication for the tenant proxy: who a ServiceAccount or OIDC
 * token belongs to, as the API server says through a TokenReview, remembered briefly.
 *
 * A caller that presents "Authorization: Bearer <token>" instead of a client certificate is
 * whoever the API server's authenticators say: px_tokens_review() asks with one TokenReview
 * (authentication.k8s.io/v1, POST /apis/authentication.k8s.io/v1/tokenreviews, as the proxy's
 * own identity, which needs `create` on tokenreviews: the ClusterRole landlord-proxy in
 * deploy/rbac.yaml), and returns the user name, uid and groups. Membership is the caller's
 * next step (view.h): a ServiceAccount "system:serviceaccount:NS:NAME" belongs to the tenant of
 * NS's landlord.dev/tenant label (px_token_sa_namespace() takes NS out), and a caller who is not
 * a member of the URL's tenant gets 403.
 *
 * Answers are cached, keyed by SHA-256 of a per-instance random salt and the token (the salt
 * keeps a stored digest from being matched against a list of tokens, and a caller from aiming
 * tokens at one hash bucket):
 *  - authenticated: for min(ttl, the JWT's exp - now), ttl at most PX_TOKENS_TTL_MAX_NS (10 s);
 *    the exp claim is read from the token's payload (not verified: only the API server's answer
 *    authenticates; exp only shortens the entry's life); a token whose exp has passed is not
 *    cached, and a token that is not a JWT or whose payload does not parse is cached for ttl;
 *  - not authenticated (the API server said so, or its user cannot be carried, below): for at
 *    most PX_TOKENS_NEGATIVE_TTL_MAX_NS (1 s);
 *  - a failed review (no answer, a timeout, a status other than 2xx, a malformed answer) is
 *    never cached: the next call asks again.
 * So a revoked token keeps working through the proxy for at most 10 s, as with the API
 * server's own webhook token cache.
 *
 * Concurrent misses for the same token are coalesced: the first caller asks the API server,
 * the others wait for its answer (success, refusal or failure alike) and make no request of
 * their own; kubectl's discovery sends dozens of requests with one token at once.
 *
 * Invariants:
 *  - the raw token is never kept: the cache holds salted digests; the request body this module
 *    builds, the answer's bytes (the API server echoes spec.token) and the parsed answer are
 *    wiped before they are freed. Copies inside libcurl's and the client's transfer buffers
 *    are beyond this module's reach;
 *  - a token is never logged, counted by value or put into an error message;
 *  - a token that is empty, over PX_TOKEN_MAX bytes, or holds a byte outside printable ASCII
 *    (a control character, a space, DEL, a non-ASCII byte) is refused with -EINVAL and never
 *    sent;
 *  - an authenticated identity is returned only when it can be impersonated as it is: a user
 *    name of 1..PX_TOKEN_NAME_MAX bytes, a uid of at most PX_TOKEN_UID_MAX, at most
 *    PX_TOKEN_GROUPS_MAX groups of 1..PX_TOKEN_GROUP_MAX bytes, none with a control character;
 *    anything more is refused (-EACCES), never cut. user.extra is not carried (the proxy
 *    impersonates user and groups only);
 *  - the cache holds at most max_entries answers; a new one evicts the oldest;
 *  - with audiences given, a review's status.audiences must name one of them, or the token is
 *    refused (-EACCES).
 *
 * Metrics: landlord_proxy_token_reviews_total{result}, one per px_tokens_review() call:
 * "cached" (answered without a request of its own: from the cache or a concurrent caller's
 * request), "authenticated", "rejected" (not authenticated, or a malformed token never sent),
 * "error" (the review failed).
 *
 * Thread-safety: px_tokens_review() from any number of threads at once (one mutex guards the
 * cache; requests are made outside it). The pure helpers are thread-safe.
 */
#ifndef LANDLORD_PROXY_TOKENS_H
#define LANDLORD_PROXY_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kc_client;
struct ll_err;
struct px_tokens;

#define PX_TOKEN_MAX        (16u << 10) /* bytes of a bearer token */
#define PX_TOKEN_NAME_MAX   1024u       /* bytes of an authenticated user name */
#define PX_TOKEN_UID_MAX    256u        /* bytes of its uid */
#define PX_TOKEN_GROUPS_MAX 32u         /* groups of one identity */
#define PX_TOKEN_GROUP_MAX  256u        /* bytes of one group */

#define PX_TOKENS_TTL_MAX_NS          (10LL * 1000000000LL)
#define PX_TOKENS_NEGATIVE_TTL_MAX_NS (1LL * 1000000000LL)
#define PX_TOKENS_ENTRIES_DEFAULT     4096u
#define PX_TOKENS_ENTRIES_MAX         (1u << 20)
#define PX_TOKENS_AUDIENCES_MAX       16u
#define PX_TOKENS_AUDIENCE_MAX        256u /* bytes of one audience */

/* How a struct px_tokens caches and asks. Everything is copied by px_tokens_new(). */
struct px_tokens_opts {
	int64_t ttl_ns;          /* authenticated answers: 0 or over the max: 10 s; <0: none */
	int64_t negative_ttl_ns; /* refusals: 0 or over the max: 1 s; <0: none */
	size_t max_entries;      /* 0: PX_TOKENS_ENTRIES_DEFAULT; at most PX_TOKENS_ENTRIES_MAX */
	/* spec.audiences of every review, NULL-terminated; NULL: the API server's own */
	const char *const *audiences;
	/* clocks (tests): monotonic ns, NULL: clock_mono_ns(); Unix ns for the JWT exp, NULL:
	 * the wall clock */
	int64_t (*now_ns)(void *ud);
	int64_t (*wall_ns)(void *ud);
	void *clock_ud;
};

/* Who a token belongs to. Every string lives in one allocation: px_token_user_release(). */
struct px_token_user {
	const char *name;          /* status.user.username */
	const char *uid;           /* status.user.uid, "" when none */
	const char *const *groups; /* status.user.groups, in the answer's order */
	size_t n_groups;
	void *mem; /* private */
};

/**
 * px_tokens_new() - a token reviewer asking through @c (borrowed; the proxy's own identity),
 * cache empty. @o NULL: defaults. Return: the reviewer (px_tokens_free() it), or NULL when @o
 * names more than PX_TOKENS_AUDIENCES_MAX audiences or one that is empty, over
 * PX_TOKENS_AUDIENCE_MAX bytes, or holds a byte outside printable ASCII, '"' or '\'.
 */
struct px_tokens *px_tokens_new(struct kc_client *c, const struct px_tokens_opts *o);
/** px_tokens_free() - free @t and its cache (its salt wiped); no call may be in flight. NULL is
 * fine. */
void px_tokens_free(struct px_tokens *t);

/**
 * px_tokens_review() - who @token (the bearer token alone, without "Bearer ") belongs to.
 * Blocks on the API server on a miss (at most the client's request timeout, also for callers
 * waiting on a concurrent miss of the same token).
 * Return: 0 with @out filled (px_token_user_release() it); on error @out is zeroed and @err
 * holds one line that never quotes the token:
 * -EINVAL (a token that is empty, too long or not printable ASCII: nothing sent, nothing
 * cached); -EACCES (the API server did not authenticate it, its identity cannot be carried or
 * names none of the audiences: cached for the negative TTL); -ETIMEDOUT (the review timed
 * out) or -EIO (it failed otherwise): not cached.
 */
int px_tokens_review(struct px_tokens *t, const char *token, struct px_token_user *out /* OUT */,
                     struct ll_err *err);

/** px_token_user_release() - free what @u holds and zero it. A zeroed @u is fine. */
void px_token_user_release(struct px_token_user *u);

/**
 * px_tokens_size() - answers cached now (expired ones not yet dropped included); for tests
 * and the bound.
 */
size_t px_tokens_size(struct px_tokens *t);

/**
 * px_token_jwt_exp() - the exp claim of @token (@len bytes) when it is a JWS in compact form:
 * three '.'-separated segments, the first not empty, whose middle one is unpadded base64url of
 * a JSON object (no duplicate keys) with a numeric exp from 0 to 2^32 (a fraction is dropped).
 * Return: true with *@exp_s set (Unix seconds); false for anything else. Pure; no signature is
 * checked.
 */
bool px_token_jwt_exp(const char *token, size_t len, int64_t *exp_s /* OUT */);

/**
 * px_token_sa_namespace() - NS of a ServiceAccount user name "system:serviceaccount:NS:NAME":
 * exactly four ':'-separated parts, NS a DNS label and NAME a DNS subdomain. Return: true with
 * NS copied into @ns (@size bytes, NUL included); false for any other name or an @ns too
 * short (then @ns is "" when @size > 0). Pure.
 */
bool px_token_sa_namespace(const char *user, char *ns /* OUT */, size_t size);

#endif
