/* ledger.c - Helm's release records and landlord's ledger of them (see ledger.h). */
#include "templates/ledger.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/jdoc.h"
#include "base/json.h"
#include "kube/informer.h"
#include "kube/kube.h"
#include "kube/yamljson.h"
#include "pki/pki.h"
#include "templates/apply.h"
#include "tenancy/tplstatus.h"

#define IDX_RELEASE "release"
#define RECORD_MAX  (16u << 20) /* bytes of a decoded release record */

static void copy(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src != NULL ? src : "");
}

/* The revision of label @version: a positive decimal, else 0. */
static long revision_of(const char *version)
{
	char *end = NULL;
	long v = version != NULL ? strtol(version, &end, 10) : 0;

	return end != NULL && end != version && *end == '\0' && v > 0 ? v : 0;
}

static void insert_sorted(struct helm_records *r, const struct helm_record *rec)
{
	size_t i = r->n;

	while (i > 0 && r->v[i - 1].revision > rec->revision) {
		r->v[i] = r->v[i - 1];
		i--;
	}
	r->v[i] = *rec;
	r->n++;
}

void helm_records_add(struct helm_records *r, const json_t *meta)
{
	struct helm_record rec = {0};
	const json_t *labels = json_object_get(meta, "labels");

	rec.revision = revision_of(jx_str(labels, "version", NULL));
	if (rec.revision == 0 || r->n == HELM_RECORDS_MAX) {
		r->overflow = true;
		return;
	}
	copy(rec.uid, sizeof(rec.uid), jx_str(meta, "uid", NULL));
	copy(rec.rv, sizeof(rec.rv), jx_str(meta, "resourceVersion", NULL));
	copy(rec.status, sizeof(rec.status), jx_str(labels, "status", NULL));
	copy(rec.digest, sizeof(rec.digest), jx_str(labels, HELM_LABEL_DIGEST, NULL));
	insert_sorted(r, &rec);
}

void helm_records_from_cache(struct inf *records, const char *ns, const char *release,
                             struct helm_records *out)
{
	char key[400];
	struct jdoc_list l;

	memset(out, 0, sizeof(*out));
	snprintf(key, sizeof(key), "%s/%s", ns, release);
	l = inf_by_index_ref(records, IDX_RELEASE, key);
	for (size_t i = 0; i < l.n; i++) {
		json_t *meta = jval_to_json(jd_get(l.items[i], "metadata", NULL));

		helm_records_add(out, meta);
		json_decref(meta);
	}
	jdoc_list_release(&l);
}

static int add_item(json_t *item, void *ud)
{
	helm_records_add(ud, json_object_get(item, "metadata"));
	return 0;
}

int helm_records_list(struct kc_client *kc, const char *ns, const char *release,
                      const char *not_older_than, struct helm_records *out, struct ll_err *err)
{
	char selector[128];
	struct kc_resp resp = {0};
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(selector, sizeof(selector), "owner=helm,name=%s", release);
	rc = kc_list(kc, &KC_SECRETS, ns,
	             &(struct kc_list_opts){.label_selector = selector,
	                                    .resource_version = not_older_than,
	                                    .resource_version_match = "NotOlderThan",
	                                    .accept = KC_ACCEPT_METADATA},
	             add_item, out, NULL, &resp, err);
	if (rc == 0 && !kc_resp_ok(&resp))
		rc = ll_err_set(err, -EAGAIN, "listing helm release records in %s: %s", ns,
		                resp.status.message);
	else if (rc != 0)
		rc = -EAGAIN;
	kc_resp_release(&resp);
	return rc;
}

char *helm_records_text(const struct helm_records *r)
{
	struct buf b = BUF_INIT(1 << 16);

	buf_appendf(&b, "%s", "");
	for (size_t i = 0; i < r->n; i++)
		buf_appendf(&b, "%ld %s %s\n", r->v[i].revision, r->v[i].uid, r->v[i].rv);
	return b.p;
}

/* The ledger's line of revision @rev in @text, parsed; false when none. */
static bool ledger_line(const char *text, long rev, char uid[64], char rv[32])
{
	const char *p = text;
	long r;

	while (p != NULL && *p != '\0') {
		if (sscanf(p, "%ld %63s %31s", &r, uid, rv) == 3 && r == rev)
			return true;
		p = strchr(p, '\n');
		p = p != NULL ? p + 1 : NULL;
	}
	return false;
}

/* Does a record @now holds of revision @rev exist? */
static bool has_revision(const struct helm_records *now, long rev)
{
	for (size_t i = 0; i < now->n; i++)
		if (now->v[i].revision == rev)
			return true;
	return false;
}

/* Is each record of @now in the ledger as it may be, given the pending run? */
static bool records_known(const char *text, long pending, bool uninstall,
                          const struct helm_records *now, char why[256])
{
	char uid[64], rv[32];

	for (size_t i = 0; i < now->n; i++) {
		const struct helm_record *rec = &now->v[i];

		if (!ledger_line(text, rec->revision, uid, rv)) {
			if (rec->revision == pending)
				continue; /* the run's own revision */
			snprintf(why, 256, "a record of revision %ld that landlord did not make",
			         rec->revision);
			return false;
		}
		if (strcmp(uid, rec->uid) != 0 || (strcmp(rv, rec->rv) != 0 && !uninstall &&
		                                   (pending == 0 || rec->revision >= pending))) {
			snprintf(why, 256, "the record of revision %ld was changed", rec->revision);
			return false;
		}
	}
	return true;
}

/* Is each ledger line still a record of @now, or one the pending run may remove? */
static bool ledger_present(const char *text, long pending, bool uninstall,
                           const struct helm_records *now, char why[256])
{
	const char *p = text;
	long rev;

	while (p != NULL && *p != '\0') {
		if (sscanf(p, "%ld", &rev) == 1 && !has_revision(now, rev) && !uninstall &&
		    (pending == 0 || rev >= pending)) {
			snprintf(why, 256, "the record of revision %ld was deleted", rev);
			return false;
		}
		p = strchr(p, '\n');
		p = p != NULL ? p + 1 : NULL;
	}
	return true;
}

bool helm_records_match(const char *text, const char *pending, const struct helm_records *now,
                        char why[256])
{
	bool uninstall = pending != NULL && strcmp(pending, LEDGER_PENDING_UNINS) == 0;
	long p = uninstall ? 0 : revision_of(pending);

	why[0] = '\0';
	if (now->overflow) {
		snprintf(why, 256, "more than %d records, or one without a revision",
		         HELM_RECORDS_MAX);
		return false;
	}
	text = text != NULL ? text : "";
	return records_known(text, p, uninstall, now, why) &&
	       ledger_present(text, p, uninstall, now, why);
}

const struct helm_record *helm_records_latest(const struct helm_records *r)
{
	return r->n > 0 ? &r->v[r->n - 1] : NULL;
}

const struct helm_record *helm_records_deployed(const struct helm_records *r)
{
	for (size_t i = r->n; i > 0; i--)
		if (strcmp(r->v[i - 1].status, "deployed") == 0)
			return &r->v[i - 1];
	return NULL;
}

bool helm_status_pending(const char *status)
{
	return strncmp(status, "pending-", 8) == 0;
}

/* ---------- a release's record ---------- */

/* gunzip @in (@len bytes) into @out, at most RECORD_MAX bytes. Return: 0 or -EINVAL. */
static int gunzip(const unsigned char *in, size_t len, struct buf *out)
{
	z_stream z = {0};
	unsigned char chunk[16384];
	int zr, rc = 0;

	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)in;
	z.avail_in = (uInt)len;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = inflate(&z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END)
			rc = -EINVAL;
		else if (buf_append(out, chunk, sizeof(chunk) - z.avail_out) != 0)
			rc = -EFBIG;
	} while (rc == 0 && zr != Z_STREAM_END && z.avail_in + z.avail_out > 0 &&
	         !(z.avail_in == 0 && z.avail_out != 0));
	if (rc == 0 && zr != Z_STREAM_END)
		rc = -EINVAL;
	inflateEnd(&z);
	return rc;
}

json_t *helm_record_decode(const char *data)
{
	struct buf once = BUF_INIT(RECORD_MAX), twice = BUF_INIT(RECORD_MAX),
	           json = BUF_INIT(RECORD_MAX);
	json_t *release = NULL;

	if (data != NULL && pki_b64_decode(data, &once) == 0 &&
	    pki_b64_decode(buf_cstr(&once), &twice) == 0 &&
	    gunzip((const unsigned char *)twice.p, twice.len, &json) == 0)
		release = json_loadb(json.p, json.len, 0, NULL);
	buf_release(&once);
	buf_release(&twice);
	buf_release(&json);
	return release;
}

/* ---------- a release's manifest ---------- */

/* "<apiVersion>/<Kind>" and "<apiVersion>/<Kind>/<ns>/<name>" of a manifest document. */
static bool object_keys(const json_t *doc, const char *ns, char kind[TPL_FAIL_OBJECT_MAX],
                        char *objkey, size_t cap)
{
	const char *av = jx_str(doc, "apiVersion", NULL), *k = jx_str(doc, "kind", NULL),
	           *name = jx_str(doc, "metadata", "name", NULL),
	           *ons = jx_str(doc, "metadata", "namespace", NULL);

	if (av == NULL || k == NULL || name == NULL)
		return false;
	snprintf(kind, TPL_FAIL_OBJECT_MAX, "%s/%s", av, k);
	snprintf(objkey, cap, "%s/%s/%s", kind, ons ? ons : ns, name);
	return true;
}

json_t *helm_manifest_objects(const char *manifest, const char *ns)
{
	json_t *out = json_object();
	const char *p = manifest, *end;
	char kind[TPL_FAIL_OBJECT_MAX], objkey[1024];

	while (p != NULL && *p != '\0') {
		const char *sep = strstr(p, "\n---");
		json_t *doc = NULL;

		end = sep != NULL ? sep + 1 : p + strlen(p);
		if (yaml_to_json(p, (size_t)(end - p), &doc, NULL) == 0 && json_is_object(doc) &&
		    object_keys(doc, ns, kind, objkey, sizeof(objkey)))
			json_object_set_new(out, objkey, json_string(kind));
		json_decref(doc);
		p = sep != NULL ? strchr(sep + 1, '\n') : NULL;
		p = p != NULL ? p + 1 : NULL;
	}
	return out;
}
