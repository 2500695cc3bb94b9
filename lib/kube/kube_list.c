/*
 * kube_list.c - paginated LIST, one page requested ahead (docs/internals/kube.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/jdoc.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/ratelimit.h"
#include "kube/kube_internal.h"

static int list_page_path(struct buf *path, const struct kc_gvr *gvr, const char *ns,
                          const struct kc_list_opts *o, const char *cont)
{
	int rc = kc_path(path, gvr, ns, NULL, NULL);

	if (rc == 0)
		rc = kc__query_long(path, "limit", o && o->limit > 0 ? o->limit : 500);
	if (rc == 0 && o)
		rc = kc__query(path, "labelSelector", o->label_selector);
	if (rc == 0 && o)
		rc = kc__query(path, "fieldSelector", o->field_selector);
	/* The server refuses a resourceVersion next to a continue token. */
	if (rc == 0 && o && cont == NULL)
		rc = kc__query(path, "resourceVersion", o->resource_version);
	if (rc == 0 && o && cont == NULL && o->resource_version != NULL)
		rc = kc__query(path, "resourceVersionMatch", o->resource_version_match);
	if (rc == 0)
		rc = kc__query(path, "continue", cont);
	return rc;
}

/* Hand each item out, dropping the page's reference as we go so pages shrink while listed. */
static int list_items(json_t *page, kc_item_fn on_item, void *ud, struct ll_err *err)
{
	json_t *items = json_object_get(page, "items");
	int rc = 0;

	if (items == NULL || json_is_null(items))
		return 0;
	if (!json_is_array(items))
		return ll_err_set(err, -EPROTO, "list answer whose items is not an array");
	for (size_t i = 0; i < json_array_size(items) && rc == 0; i++) {
		rc = on_item(json_array_get(items, i), ud);
		json_array_set_new(items, i, json_null());
	}
	json_array_clear(items);
	return rc;
}

/*
 * The continue token from the raw page, so the next page can be requested before this one is
 * parsed. The API server writes kind, apiVersion and metadata before items; anything else makes
 * the scan unsure and the caller parses first.
 */
struct scan {
	const char *p, *end;
};

struct span {
	const char *p;
	size_t len;
	bool escaped;
};

static void scan_space(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool scan_char(struct scan *s, char ch)
{
	scan_space(s);
	if (s->p == s->end || *s->p != ch)
		return false;
	s->p++;
	return true;
}

static bool scan_string(struct scan *s, struct span *out)
{
	struct span sp = {NULL, 0, false};

	if (!scan_char(s, '"'))
		return false;
	sp.p = s->p;
	while (s->p < s->end && *s->p != '"') {
		if (*s->p == '\\') {
			sp.escaped = true;
			s->p++;
			if (s->p == s->end)
				return false;
		}
		s->p++;
	}
	if (s->p == s->end)
		return false;
	sp.len = (size_t)(s->p - sp.p);
	s->p++;
	if (out)
		*out = sp;
	return true;
}

static bool scalar_char(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || ch == '-' || ch == '+' ||
	       ch == '.' || ch == 'E';
}

/* Skip one value; brackets are counted, not matched (a page that parses has them matched). */
static bool scan_skip(struct scan *s)
{
	unsigned depth = 0;
	const char *start;

	do {
		scan_space(s);
		if (s->p == s->end)
			return false;
		switch (*s->p) {
		case '"':
			if (!scan_string(s, NULL))
				return false;
			break;
		case '{':
		case '[':
			depth++;
			s->p++;
			break;
		case '}':
		case ']':
			if (depth == 0)
				return false;
			depth--;
			s->p++;
			break;
		default:
			/* a scalar, or the separators and scalars inside a container */
			start = s->p;
			while (s->p < s->end &&
			       (depth ? !memchr("\"{}[]", *s->p, 5) : scalar_char(*s->p)))
				s->p++;
			if (s->p == start)
				return false;
			break;
		}
	} while (depth > 0);
	return true;
}

static bool span_is(const struct span *sp, const char *word)
{
	return !sp->escaped && sp->len == strlen(word) && memcmp(sp->p, word, sp->len) == 0;
}

/* The metadata object: its "continue" member, if any. */
static enum kc_scan scan_metadata(struct scan *s, struct span *token)
{
	enum kc_scan r = KC_SCAN_LAST;
	struct span key;

	if (!scan_char(s, '{'))
		return KC_SCAN_UNSURE;
	if (scan_char(s, '}'))
		return r;
	do {
		if (!scan_string(s, &key) || key.escaped || !scan_char(s, ':'))
			return KC_SCAN_UNSURE;
		if (span_is(&key, "continue")) {
			if (r != KC_SCAN_LAST || !scan_string(s, token) || token->escaped)
				return KC_SCAN_UNSURE;
			r = token->len ? KC_SCAN_NEXT : KC_SCAN_LAST;
		} else if (!scan_skip(s)) {
			return KC_SCAN_UNSURE;
		}
	} while (scan_char(s, ','));
	return scan_char(s, '}') ? r : KC_SCAN_UNSURE;
}

enum kc_scan kc__scan_continue(const char *raw, size_t len, char **token)
{
	struct scan s = {raw, raw + len};
	enum kc_scan r = KC_SCAN_UNSURE;
	struct span key, tok = {NULL, 0, false};
	bool meta = false;

	*token = NULL;
	if (raw == NULL || !scan_char(&s, '{'))
		return KC_SCAN_UNSURE;
	do {
		if (!scan_string(&s, &key) || key.escaped || !scan_char(&s, ':'))
			return KC_SCAN_UNSURE;
		if (span_is(&key, "items"))
			break;
		if (span_is(&key, "metadata")) {
			if (meta)
				return KC_SCAN_UNSURE;
			meta = true;
			r = scan_metadata(&s, &tok);
			if (r == KC_SCAN_UNSURE)
				return r;
		} else if (!scan_skip(&s)) {
			return KC_SCAN_UNSURE;
		}
	} while (scan_char(&s, ','));
	if (!meta || !span_is(&key, "items"))
		return KC_SCAN_UNSURE;
	if (r == KC_SCAN_NEXT)
		*token = xstrndup(tok.p, tok.len);
	return r;
}

/*
 * One page request. A page is prepared (path built, rate-limit slot taken), sent, then waited
 * for; a failure before sending is kept in @rc and reported when the page's turn comes, so
 * errors surface in the order a page-by-page list would meet them.
 */
struct page {
	struct buf path;
	struct req rq;
	bool prepared;
	bool waited;
	int rc; /* list_page_path() fails only with -EMSGSIZE, kc__submit() only with -ECANCELED */
	int64_t not_before; /* the rate-limit slot */
	int64_t start_ns;
	struct xfer *x; /* sent and not yet released */
};

struct lister {
	struct kc_client *c;
	const struct kc_gvr *gvr;
	const char *ns;
	const struct kc_list_opts *o;
	kc_item_fn on_item; /* jansson items, or */
	kc_doc_fn on_doc;   /* documents built with @proj */
	const struct jdoc_opts *proj;
	void *ud;
	struct page pages[2]; /* the page being handed out and the one requested ahead */
};

static void page_prepare(struct lister *ls, struct page *pg, const char *cont)
{
	buf_reset(&pg->path);
	pg->prepared = true;
	pg->rc = list_page_path(&pg->path, ls->gvr, ls->ns, ls->o, cont);
	pg->rq.path = buf_cstr(&pg->path);
	pg->not_before = clock_mono_ns() + tbucket_reserve(&ls->c->rl);
}

static bool page_due(const struct page *pg)
{
	return pg->not_before <= clock_mono_ns();
}

static void page_send(struct lister *ls, struct page *pg)
{
	if (pg->rc || pg->x)
		return;
	if (!page_due(pg))
		clock_sleep_until(pg->not_before);
	pg->start_ns = clock_mono_ns();
	pg->x = kc__xfer_new(ls->c, &pg->rq, false);
	pg->rc = kc__submit(ls->c, pg->x);
	if (pg->rc) {
		kc__record(ls->c, &pg->rq, 0, pg->start_ns, clock_mono_ns());
		kc__xfer_free(pg->x);
		pg->x = NULL;
	}
}

/* Wait for a sent page's answer. Return: 0 (pg->x is DONE with an answer) or why not. */
static int page_wait(struct lister *ls, struct page *pg, struct kc_resp *resp, struct ll_err *err)
{
	struct xfer *x = pg->x;

	if (pg->rc == -EMSGSIZE)
		return kc__path_error(resp, err);
	if (pg->rc)
		return ll_err_set(err, pg->rc, "%s %s: client closed", pg->rq.method, pg->rq.path);
	kc__wait_done(ls->c, x);
	pg->waited = true;
	kc__record(ls->c, &pg->rq, x->rc ? 0 : x->http_status, pg->start_ns, x->done_ns);
	return x->rc ? kc__transfer_error(x, &pg->rq, err) : 0;
}

/* Forget a page; one still in flight is cancelled first (and counted with what it got). */
static void page_release(struct lister *ls, struct page *pg)
{
	struct xfer *x = pg->x;

	if (x && !pg->waited) {
		kc__cancel_and_wait(ls->c, x);
		kc__record(ls->c, &pg->rq, x->rc ? 0 : x->http_status, pg->start_ns, x->done_ns);
	}
	kc__xfer_free(x);
	pg->x = NULL;
	pg->rc = 0;
	pg->prepared = false;
	pg->waited = false;
}

static int hand_doc(void *ctx, struct jdoc *take_item)
{
	struct lister *ls = ctx;

	return ls->on_doc(take_item, ls->ud);
}

/* A 2xx page parsed straight into documents; @resp gets the page without its items. */
static int doc_page(struct lister *ls, const struct xfer *x, struct kc_resp *resp,
                    struct ll_err *err)
{
	struct jdoc *rest = NULL;
	struct ll_err perr = {{0}};
	int rc = jdoc_parse_items(x->rbody.p, x->rbody.len, "items", ls->proj, hand_doc, ls, &rest,
	                          &perr);

	if (rc == -EINVAL || rc == -EMSGSIZE)
		return ll_err_set(err, -EPROTO, "malformed list page: %s", perr.msg);
	if (rc)
		return ll_err_set(err, rc, "%s",
		                  perr.msg[0] ? perr.msg : "list item handler failed");
	resp->http_status = x->http_status;
	resp->body = jval_to_json(jdoc_root(rest));
	jdoc_unref(rest);
	kc__parse_status(resp->body, x->http_status, NULL, 0, &resp->status);
	return 0;
}

/*
 * The answer of the page that has arrived: the next page is requested from its raw continue
 * token (when certain) before the page is parsed, so parsing overlaps the next transfer.
 * @cont receives the token to continue with (NULL: last page).
 */
static int page_answer(struct lister *ls, struct page *cur, struct page *next, char **cont,
                       struct kc_resp *resp, struct ll_err *err)
{
	struct xfer *x = cur->x;
	bool ok = x->http_status >= 200 && x->http_status < 300 && x->json;
	enum kc_scan scan = ok ? kc__scan_continue(x->rbody.p, x->rbody.len, cont) : KC_SCAN_UNSURE;
	int rc;

	if (scan == KC_SCAN_NEXT) {
		page_prepare(ls, next, *cont);
		if (page_due(next))
			page_send(ls, next);
	}
	if (ok && ls->on_doc)
		rc = doc_page(ls, x, resp, err);
	else
		rc = kc__fill_resp(x->http_status, x->json, &x->rbody, resp, err);
	kc__set_content_type(resp, x->content_type);
	page_release(ls, cur);
	if (rc == 0 && scan == KC_SCAN_UNSURE && kc_resp_ok(resp)) {
		*cont = xstrdup(jx_str(resp->body, "metadata", "continue", NULL));
		if (*cont && **cont)
			page_prepare(ls, next, *cont);
	}
	return rc;
}

/* The pages' path is the same but for the query: checked once, as kc_do() checks its paths. */
static int check_list_path(const struct kc_gvr *gvr, const char *ns, struct kc_resp *resp,
                           struct ll_err *err)
{
	struct buf path = BUF_INIT(BUF_MAX_INTERNAL);
	int rc = kc_path(&path, gvr, ns, NULL, NULL);

	if (rc)
		rc = kc__path_error(resp, err);
	else
		rc = kc__check_target(buf_cstr(&path), NULL, err);
	buf_release(&path);
	return rc;
}

static int run_list(struct lister *ls, char **list_rv, struct kc_resp *resp, struct ll_err *err)
{
	/*
	 * libcurl 7.88 sometimes stops delivering a multiplexed HTTP/2 stream (the transfer then
	 * times out) when other streams start on the connection while it streams; continuous list
	 * pages made that frequent, so they travel over HTTP/1.1 connections of their own.
	 */
	struct req rq = {.verb = "LIST",
	                 .method = "GET",
	                 .accept = ls->o ? ls->o->accept : NULL,
	                 .http1 = true,
	                 .flags = KC_REQ_HTTP1};
	struct kc_client *c = ls->c;
	struct page *cur = &ls->pages[0], *next = &ls->pages[1], *tmp;
	char *cont = NULL;
	int rc;

	memset(resp, 0, sizeof(*resp));
	if (list_rv)
		*list_rv = NULL;
	rc = check_list_path(ls->gvr, ls->ns, resp, err);
	if (rc)
		return rc;
	rc = kc__enter(c);
	if (rc)
		return ll_err_set(err, rc, "LIST %s: client closed", ls->gvr->resource);
	for (int i = 0; i < 2; i++)
		ls->pages[i] = (struct page){.path = BUF_INIT(BUF_MAX_INTERNAL), .rq = rq};
	page_prepare(ls, cur, NULL);
	for (;;) {
		kc_resp_release(resp);
		page_send(ls, cur);
		rc = page_wait(ls, cur, resp, err);
		if (rc == 0)
			rc = page_answer(ls, cur, next, &cont, resp, err);
		if (rc || !kc_resp_ok(resp))
			break;
		if (ls->on_item)
			rc = list_items(resp->body, ls->on_item, ls->ud, err);
		free(cont);
		cont = NULL;
		if (rc || !next->prepared)
			break;
		tmp = cur;
		cur = next;
		next = tmp;
	}
	if (rc == 0 && kc_resp_ok(resp) && list_rv)
		*list_rv = xstrdup(jx_str(resp->body, "metadata", "resourceVersion", NULL));
	free(cont);
	page_release(ls, cur);
	page_release(ls, next);
	buf_release(&cur->path);
	buf_release(&next->path);
	kc__leave(c);
	return rc;
}

int kc_list(struct kc_client *c, const struct kc_gvr *gvr, const char *ns,
            const struct kc_list_opts *opts, kc_item_fn on_item, void *ud, char **list_rv,
            struct kc_resp *resp, struct ll_err *err)
{
	struct lister ls = {.c = c, .gvr = gvr, .ns = ns, .o = opts, .on_item = on_item, .ud = ud};

	return run_list(&ls, list_rv, resp, err);
}

int kc_list_docs(struct kc_client *c, const struct kc_gvr *gvr, const char *ns,
                 const struct kc_list_opts *opts, const struct jdoc_opts *proj, kc_doc_fn on_item,
                 void *ud, char **list_rv, struct kc_resp *resp, struct ll_err *err)
{
	struct lister ls = {
	        .c = c, .gvr = gvr, .ns = ns, .o = opts, .on_doc = on_item, .proj = proj, .ud = ud};

	return run_list(&ls, list_rv, resp, err);
}
