/*
 * release_run.c - one reconcile of one Helm release (releases.h): the chart installed or
 * upgraded as the owner's account when its digest is not what runs, a release left pending
 * recovered first, a removal run as the account that installed; never on records that differ
 * from landlord's ledger, never on a release landlord did not install.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "kube/kube.h"
#include "pki/pki.h"
#include "templates/releases_internal.h"

#define TOKEN_SECONDS    600
#define BUSY_RETRY_MS    1000
#define RETRY_BASE_MS    5000
#define RETRY_MAX_MS     (5 * 60 * 1000)
#define CREDENTIAL_BYTES (64u << 10)

/* ---------- helpers ---------- */

/* Back-off after a failed run: 5 s doubling, at most 5 minutes. */
static struct ctrl_result backoff(struct rel_rec *r)
{
	long long n = 0;
	long ms = RETRY_BASE_MS;
	const json_t *old;

	pthread_mutex_lock(&r->h->lock);
	old = json_object_get(r->h->results, r->key);
	n = json_integer_value(json_object_get(old, "failures"));
	pthread_mutex_unlock(&r->h->lock);
	json_object_set_new(r->result, "failures", json_integer(n + 1));
	while (n-- > 0 && ms < RETRY_MAX_MS)
		ms *= 2;
	ms = ms < RETRY_MAX_MS ? ms : RETRY_MAX_MS;
	json_object_set_new(r->result, "retryAt", json_integer(clock_mono_ms() + ms));
	return CTRL_RESULT_AFTER(ms);
}

/*
 * Did this very wish fail, with its retry not due yet? Then nothing runs: events (the failed
 * run's own records) do not hasten a retry. r->result keeps what was reported.
 */
static bool held_back(struct rel_rec *r)
{
	int64_t now = clock_mono_ms(), at = 0;
	const json_t *old;

	pthread_mutex_lock(&r->h->lock);
	old = json_object_get(r->h->results, r->key);
	if (old != NULL &&
	    json_integer_value(json_object_get(old, "gen")) ==
	            json_integer_value(json_object_get(r->want, "gen")) &&
	    (at = json_integer_value(json_object_get(old, "retryAt"))) > now)
		json_object_update(r->result, (json_t *)old);
	pthread_mutex_unlock(&r->h->lock);
	r->wait_ms = at > now ? (long)(at - now) : 0;
	return at > now;
}

/* A bearer token of the ServiceAccount @account in landlord-system; *@token: zero, then free. */
static int account_token(struct rel_rec *r, const char *account, char **token)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = kc_token_request(r->t->kc, LANDLORD_SYSTEM_NAMESPACE, account, TOKEN_SECONDS,
	                          token, &resp, &err);

	if (rc != 0 || *token == NULL) {
		rel_fail(r, "AccountFailed", "no token for ServiceAccount %s/%s: %s",
		         LANDLORD_SYSTEM_NAMESPACE, account,
		         err.msg[0] ? err.msg : resp.status.message);
		rc = -EAGAIN;
	}
	kc_resp_release(&resp);
	return rc;
}

/* A TemplateGroupInstance's account tgi.<ns>, made and bound in the namespace when it is not. */
static int bind_account(struct rel_rec *r)
{
	struct ti_account account;
	struct ll_err err = {{0}};
	bool changed;

	if (!json_is_true(json_object_get(r->want, "bindAccount")))
		return 0;
	tgi_account_for(r->ns, &account);
	if (ti_account_ensure(r->t, r->ns, &account, &changed, &err) != 0) {
		rel_fail(r, "AccountFailed", "%s", err.msg);
		return -EAGAIN;
	}
	return 0;
}

static void drop_token(char *token)
{
	if (token != NULL)
		explicit_bzero(token, strlen(token));
	free(token);
}

/* The ledger's resourceVersion: every run of landlord's helm was over before it was written. */
static const char *ledger_version(const struct rel_rec *r)
{
	return jx_str(r->ledger, "metadata", "resourceVersion", NULL);
}

/*
 * The records now, from the cache, or when it disagrees with the ledger, from the API server
 * (at least as fresh as the ledger).
 */
static int current_records(struct rel_rec *r, char why[256])
{
	struct ll_err err = {{0}};
	const char *text = rel_ledger_str(r, "records"), *pending = rel_ledger_str(r, "pending");

	helm_records_from_cache(r->h->records, r->ns, r->release, &r->recs);
	if (helm_records_match(text, pending, &r->recs, why))
		return 0;
	if (helm_records_list(r->t->kc, r->ns, r->release, ledger_version(r), &r->recs, &err) !=
	    0) {
		rel_fail(r, "HelmFailed", "%s", err.msg);
		return -EAGAIN;
	}
	return helm_records_match(text, pending, &r->recs, why) ? 0 : -EPERM;
}

/*
 * What the latest record says (when @learn): its chart's version into @version, and its
 * objects watched (release_sync.c). @secret: that record as just read, or NULL to read it.
 * Return: 0, or -EAGAIN when the record cannot be read.
 */
static int learn(struct rel_rec *r, const json_t *secret, char version[129])
{
	const struct helm_record *latest = helm_records_latest(&r->recs);
	json_t *got = secret == NULL && latest != NULL ? rel_get_record(r, latest->revision) : NULL,
	       *release = rel_decode_record(secret ? secret : got, latest);
	int rc = release != NULL ? rel_sync_learn(r, release, r->run_started) : -EAGAIN;

	snprintf(version, 129, "%s", jx_str(release, "chart", "metadata", "version", NULL) ?: "");
	json_decref(release);
	json_decref(got);
	return rc;
}

/*
 * Re-read the records after a run and write them in the ledger, nothing pending; after a run
 * that succeeded (@learned), what the release holds now. @revision: the run's new revision
 * (0: none). Helm's last write is always to that record, so once it is read, a LIST from the
 * watch cache at its version shows every record as the run left them. After `helm install`
 * (@installed), that record is the only one landlord takes: one made beside it is not its.
 */
static int settle(struct rel_rec *r, bool learned, long revision, bool installed)
{
	struct ll_err err = {{0}};
	char *text, version[129] = "";
	json_t *secret = revision > 0 ? rel_get_record(r, revision) : NULL;
	int rc = 0;

	if (installed && secret != NULL) {
		memset(&r->recs, 0, sizeof(r->recs));
		helm_records_add(&r->recs, json_object_get(secret, "metadata"));
	} else {
		rc = helm_records_list(r->t->kc, r->ns, r->release,
		                       jx_str(secret, "metadata", "resourceVersion", NULL),
		                       &r->recs, &err);
	}
	if (rc != 0) {
		log_warn("cannot read a helm release's records after a run", "{s:s,s:s}", "release",
		         r->key, "error", err.msg);
		json_decref(secret);
		return rel_fail(r, "HelmFailed", "%s", err.msg), rc;
	}
	if (learned && learn(r, secret, version) != 0)
		log_warn("cannot watch a helm release's objects", "{s:s}", "release", r->key);
	json_decref(secret);
	text = helm_records_text(&r->recs);
	rc = rel_ledger_write(r, LEDGER_PENDING_NONE, text, learned ? version : NULL);
	free(text);
	return rc;
}

static void report_release(struct rel_rec *r, const char *chart_version)
{
	const struct helm_record *latest = helm_records_latest(&r->recs);

	if (latest == NULL)
		return;
	json_object_set_new(r->result, "status", json_string(latest->status));
	json_object_set_new(r->result, "revision", json_integer(latest->revision));
	json_object_set_new(r->result, "chartVersion", json_string(chart_version));
}

/* ---------- the chart ---------- */

/* A key of Secret data @data, decoded into @out. */
static int secret_value(const json_t *data, const char *key, struct buf *out)
{
	const char *b64 = jx_str(data, key, NULL);

	return b64 != NULL ? pki_b64_decode(b64, out) : -ENOENT;
}

/* The repository's credentials (credentials.secretRef) into @src; @bufs hold them. */
static int credentials(struct rel_rec *r, const json_t *ref, struct buf bufs[3],
                       struct helm_source *src)
{
	const char *ns = jx_str(ref, "namespace", NULL), *name = jx_str(ref, "name", NULL);
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	const json_t *data;
	int rc = kc_get(r->t->kc, &KC_SECRETS, ns, name, &resp, &err);

	if (rc != 0 || !kc_resp_ok(&resp)) {
		rel_fail(r, "ChartNotFound", "credentials Secret %s/%s: %s", ns, name,
		         err.msg[0] ? err.msg : resp.status.message);
		rc = -ENOENT;
		goto out;
	}
	data = json_object_get(resp.body, "data");
	if (secret_value(data, "username", &bufs[0]) != 0 ||
	    secret_value(data, "password", &bufs[1]) != 0) {
		rel_fail(r, "ChartNotFound",
		         "credentials Secret %s/%s needs the keys username and password", ns, name);
		rc = -ENOENT;
		goto out;
	}
	src->username = buf_cstr(&bufs[0]);
	src->password = buf_cstr(&bufs[1]);
	if (secret_value(data, "ca.crt", &bufs[2]) == 0) {
		src->ca_pem = bufs[2].p;
		src->ca_pem_len = bufs[2].len;
	}
out:
	kc_resp_release(&resp);
	return rc;
}

/* The chart of a repository: pulled once into the cache (helm_pull.h). */
static int pull(struct rel_rec *r, const json_t *helm)
{
	struct buf bufs[3] = {BUF_INIT(CREDENTIAL_BYTES), BUF_INIT(CREDENTIAL_BYTES),
	                      BUF_INIT(CREDENTIAL_BYTES)};
	struct helm_source src = {.repo_url = jx_str(helm, "repoUrl", NULL),
	                          .chart = jx_str(helm, "chart", NULL),
	                          .version = jx_str(helm, "version", NULL)};
	const json_t *ref = jx_get(helm, "credentials", "secretRef", NULL);
	struct helm_result res = {0};
	int rc = ref != NULL ? credentials(r, ref, bufs, &src) : 0;

	if (rc == 0) {
		rc = helm_pull(&r->h->pulls, &src, r->chart, &res);
		if (rc != 0 && rc != -EBUSY && rc != -ECANCELED)
			rel_fail(r,
			         rc == -ENOENT      ? "ChartNotFound"
			         : rc == -EACCES    ? "Forbidden"
			         : rc == -ETIMEDOUT ? "HelmTimedOut"
			                            : "HelmFailed",
			         "helm pull: %s", res.message);
	}
	for (size_t i = 0; i < 3; i++) {
		if (bufs[i].p != NULL)
			explicit_bzero(bufs[i].p, bufs[i].len);
		buf_release(&bufs[i]);
	}
	helm_result_release(&res);
	return rc;
}

/* r->chart and r->digest for the wish. */
static int resolve_chart(struct rel_rec *r, struct helm_release *rel)
{
	const json_t *helm = json_object_get(r->want, "helm");
	const char *path = jx_str(helm, "path", NULL);
	struct ll_err err = {{0}};
	int rc = 0;

	if (path != NULL)
		snprintf(r->chart, sizeof(r->chart), "%s", path);
	else
		rc = pull(r, helm);
	if (rc != 0)
		return rc;
	rel->chart = r->chart;
	rel->values = json_object_get(r->want, "values");
	rel->set = json_object_get(r->want, "set");
	rc = helm_release_digest(rel, r->digest, &err);
	if (rc != 0)
		rel_fail(r, "ChartNotFound", "%s", err.msg);
	rel->digest = r->digest;
	return rc;
}

/* ---------- runs ---------- */

/* What a run's @rc means for the result; a run that did not start is retried soon. */
/*
 * The reason of a failed run: Forbidden when the API server (RBAC) or an admission webhook or
 * policy refused what the chart asked, so the status says who said no.
 */
static const char *failure_reason(int rc, const char *message)
{
	if (rc == -ETIMEDOUT)
		return "HelmTimedOut";
	if (strstr(message, "is forbidden:") != NULL ||
	    strstr(message, "denied the request") != NULL)
		return "Forbidden";
	return "HelmFailed";
}

static int judge(struct rel_rec *r, int rc, const struct helm_result *res, const char *what)
{
	if (rc == -EBUSY || rc == -ECANCELED)
		return -EBUSY;
	if (rc != 0 && rc != -ENOENT) {
		rel_fail(r, failure_reason(rc, res->message), "helm %s: %s", what, res->message);
		log_warn("helm failed", "{s:s,s:s,s:s}", "release", r->key, "command", what,
		         "message", res->message);
	}
	return rc;
}

/*
 * A release left pending-* by a helm that no longer runs (only this worker runs helm on it):
 * rolled back to its last deployed revision, or uninstalled when it has none.
 */
static int recover(struct rel_rec *r, struct helm_release *rel, const char *token)
{
	const struct helm_record *latest = helm_records_latest(&r->recs),
	                         *deployed = helm_records_deployed(&r->recs);
	struct helm_result res = {0};
	char pending[24], msg[TPL_FAIL_MESSAGE_MAX];
	int rc;

	snprintf(msg, sizeof(msg), "revision %ld was %s with no helm running; %s", latest->revision,
	         latest->status, deployed ? "rolled back" : "uninstalled");
	snprintf(pending, sizeof(pending), "%ld", latest->revision + 1);
	rel->token = token;
	rel->revision = deployed ? deployed->revision : 0;
	rc = rel_ledger_write(r, deployed ? pending : LEDGER_PENDING_UNINS, NULL, NULL);
	if (rc == 0)
		rc = deployed ? helm_rollback(&r->h->runner, rel, &res)
		              : helm_uninstall(&r->h->runner, rel, &res);
	rc = judge(r, rc == -ENOENT ? 0 : rc, &res, deployed ? "rollback" : "uninstall");
	helm_result_release(&res);
	if (settle(r, false, deployed ? latest->revision + 1 : 0, false) != 0 && rc == 0)
		rc = -EAGAIN;
	if (rc == 0) {
		log_info("helm release recovered", "{s:s,s:s}", "release", r->key, "how", msg);
		json_object_set_new(r->result, "reason", json_string("ReleaseRecovered"));
		json_object_set_new(r->result, "message", json_string(msg));
	}
	return rc;
}

/* The release is someone else's: never taken over. Return: -EEXIST. */
static int conflict(struct rel_rec *r)
{
	rel_fail(r, "Conflict",
	         "release %s already exists in %s and landlord did not install it; it is never "
	         "taken over",
	         r->release, r->ns);
	return -EEXIST;
}

/*
 * helm upgrade --install, as the wish's account; `helm install` when there is no record yet,
 * which refuses a release someone made since landlord looked: its ledger goes again, the records
 * stay theirs, and the install is tried again after a back-off (they may free the name).
 */
static int upgrade(struct rel_rec *r, struct helm_release *rel, const char *token)
{
	const struct helm_record *latest = helm_records_latest(&r->recs);
	long revision = latest ? latest->revision + 1 : 1;
	struct helm_result res = {0};
	char pending[24];
	int rc;

	snprintf(pending, sizeof(pending), "%ld", revision);
	rel->token = token;
	/* a synced release's chart wins every run: a retry of a failed repair takes fields too */
	rel->force = r->force || json_is_true(json_object_get(r->want, "sync"));
	r->run_started = (long long)time(NULL) - 1; /* managedFields times are whole seconds */
	rc = rel_ledger_write(r, pending, NULL, NULL);
	if (rc == 0 && latest == NULL) {
		rc = helm_install(&r->h->runner, rel, &res);
		if (rc == -EIO && helm_name_in_use(&res)) { /* tried again after a back-off */
			helm_result_release(&res);
			if (rel_ledger_delete(r) == 0)
				conflict(r);
			return -EAGAIN;
		}
		rc = judge(r, rc, &res, "install");
	} else if (rc == 0) {
		rc = judge(r, helm_upgrade(&r->h->runner, rel, &res), &res, "upgrade");
	}
	helm_result_release(&res);
	if (settle(r, rc == 0, revision, latest == NULL) != 0 && rc == 0)
		rc = -EAGAIN;
	return rc;
}

/* ---------- install and remove ---------- */

/*
 * Nothing of this release but what landlord made: a ledger, or no records at all. Records in
 * landlord's cache refuse it at once; records made too recently for the cache make the first
 * install (`helm install`) refuse it. Then the namespace's mark, before the records are compared
 * (the landlord-helm-records policy lets nobody else write them from then on).
 */
static int claim(struct rel_rec *r)
{
	if (r->ledger == NULL) {
		helm_records_from_cache(r->h->records, r->ns, r->release, &r->recs);
		if (r->recs.n > 0 || r->recs.overflow)
			return conflict(r);
		if (rel_ledger_create(r) != 0)
			return -EAGAIN;
	}
	return rel_mark_namespace(r);
}

/* Why the release is not deployed from the wanted digest with nothing pending; NULL when it is. */
static const char *stale_reason(const struct rel_rec *r)
{
	const struct helm_record *latest = helm_records_latest(&r->recs);

	if (latest == NULL)
		return "no release yet";
	if (strcmp(rel_ledger_str(r, "pending"), LEDGER_PENDING_NONE) != 0)
		return "a run of landlord's was not settled";
	if (strcmp(latest->status, "deployed") != 0)
		return "its latest revision is not deployed";
	if (strcmp(latest->digest, r->digest) != 0)
		return "the chart or its values changed";
	return NULL;
}

static bool up_to_date(const struct rel_rec *r)
{
	return stale_reason(r) == NULL;
}

/*
 * Up to date: is a repair due (sync, an object drifted, none forced lately)? Objects not known
 * yet (a restart) are learned from Helm's record, with no helm run.
 */
static bool repair_due(struct rel_rec *r)
{
	char version[129];

	if (!rel_sync_known(r) && learn(r, NULL, version) != 0)
		log_warn("cannot watch a helm release's objects", "{s:s}", "release", r->key);
	if (!json_is_true(json_object_get(r->want, "sync")))
		return false;
	r->force = rel_sync_drifted(r, &r->wait_ms);
	return r->force;
}

/*
 * Did landlord's last run deploy the wanted chart, with only its settling missing (landlord
 * stopped before it, or a read or the ledger's write failed)? Then it is settled, with no helm.
 */
static bool ran_unsettled(const struct rel_rec *r)
{
	const struct helm_record *latest = helm_records_latest(&r->recs);
	char revision[24];

	if (latest == NULL)
		return false;
	snprintf(revision, sizeof(revision), "%ld", latest->revision);
	return strcmp(rel_ledger_str(r, "pending"), revision) == 0 &&
	       strcmp(latest->status, "deployed") == 0 && strcmp(latest->digest, r->digest) == 0;
}

static int install(struct rel_rec *r)
{
	struct helm_release rel = {.name = r->release, .ns = r->ns};
	const struct helm_record *latest;
	char *token = NULL;
	int rc = resolve_chart(r, &rel);

	if (rc == 0 && ran_unsettled(r)) {
		log_info("settling a helm release's last run", "{s:s}", "release", r->key);
		rc = settle(r, true, helm_records_latest(&r->recs)->revision, false);
	}
	if (rc == 0 && up_to_date(r) && !repair_due(r))
		return 0; /* the common case: no helm, no token */
	/* as the instance's account now: an editor's edit of an owner's instance runs as editor */
	if (rc == 0)
		rc = bind_account(r);
	if (rc == 0)
		rc = account_token(r, jx_str(r->want, "account", NULL), &token);
	latest = helm_records_latest(&r->recs);
	if (rc == 0 && latest != NULL && helm_status_pending(latest->status))
		rc = recover(r, &rel, token);
	if (rc == 0 && (!up_to_date(r) || r->force)) {
		log_info("running helm for a release", "{s:s,s:s}", "release", r->key, "why",
		         stale_reason(r) ?: "an object drifted (--force-conflicts)");
		rc = upgrade(r, &rel, token);
	}
	drop_token(token);
	return rc;
}

/* As the account the removal's wish names (the instance's now), else the ledger's. */
static int uninstall(struct rel_rec *r)
{
	struct helm_release rel = {.name = r->release, .ns = r->ns};
	struct helm_result res = {0};
	const char *account = jx_str(r->want, "account", NULL);
	char *token = NULL;
	int rc = account_token(r, account && *account ? account : rel_ledger_str(r, "account"),
	                       &token);

	rel.token = token;
	if (rc == 0)
		rc = rel_ledger_write(r, LEDGER_PENDING_UNINS, NULL, NULL);
	if (rc == 0)
		rc = judge(r, helm_uninstall(&r->h->runner, &rel, &res), &res, "uninstall");
	helm_result_release(&res);
	drop_token(token);
	if (rc == 0 || rc == -ENOENT) {
		rel_sync_forget(r);
		rc = rel_ledger_delete(r);
	} else {
		settle(r, false, 0, false);
	}
	return rc;
}

/* ---------- the reconcile ---------- */

/* No wish: a ledger whose namespace is gone goes too. */
static struct ctrl_result collect(struct rel_rec *r)
{
	const struct jdoc *ns = inf_get_ref(r->t->namespaces, NULL, r->ns);

	if (r->ledger != NULL && ns == NULL && rel_ledger_delete(r) != 0) {
		jdoc_unref(ns);
		return CTRL_RESULT_RETRY;
	}
	jdoc_unref(ns);
	return CTRL_RESULT_DONE;
}

static struct ctrl_result outcome(struct rel_rec *r, int rc)
{
	if (rc == -EBUSY)
		return CTRL_RESULT_AFTER(BUSY_RETRY_MS);
	if (rc != 0)
		return backoff(r);
	return r->wait_ms > 0 ? CTRL_RESULT_AFTER(r->wait_ms) : CTRL_RESULT_DONE;
}

struct ctrl_result rel_reconcile(struct rel_rec *r)
{
	bool removal = r->want != NULL && json_object_get(r->want, "helm") == NULL;
	const char *owner = r->want ? jx_str(r->want, "owner", NULL) : NULL;
	char why[256];
	int rc;

	if (r->want == NULL)
		return collect(r);
	if (r->ledger != NULL && strcmp(rel_ledger_str(r, "owner"), owner) != 0) {
		rel_fail(r, "Conflict", "release %s in %s belongs to %s", r->release, r->ns,
		         rel_ledger_str(r, "owner"));
		return CTRL_RESULT_DONE;
	}
	if (removal && r->ledger == NULL) {
		json_object_set_new(r->result, "gone", json_true());
		return CTRL_RESULT_DONE;
	}
	if (held_back(r))
		return CTRL_RESULT_AFTER(r->wait_ms);
	rc = removal ? 0 : claim(r);
	if (rc == 0 && (rc = current_records(r, why)) == -EPERM) {
		rel_fail(r, "ReleaseTampered",
		         "Helm's records of release %s in %s are not what landlord left (%s); "
		         "no helm command runs on them until they are (docs/helm.md)",
		         r->release, r->ns, why);
		return CTRL_RESULT_DONE;
	}
	if (rc == 0)
		rc = removal ? uninstall(r) : install(r);
	if (rc == 0 && removal)
		json_object_set_new(r->result, "gone", json_true());
	if (!removal) {
		report_release(r, rel_ledger_str(r, "chartVersion"));
		rel_sync_counts(r->h, r->key, r->result);
	}
	if (rc == 0 && !removal)
		json_object_set_new(r->result, "ready", json_true());
	return rc == -EEXIST ? CTRL_RESULT_DONE : outcome(r, rc);
}
