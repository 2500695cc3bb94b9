/*
 * later.c - answers sent from another thread (later.h). The request's connection is suspended
 * from http_resp_defer() until the holder sends, then resumed: libmicrohttpd calls the access
 * callback again, and http__later_answer() queues what the holder left in the later.
 */
#include <assert.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "http/later.h"
#include "http/server.h"
#include "http/server_internal.h"

enum later_state {
	L_PENDING,   /* the holder has not sent */
	L_READY,     /* sent: status and response are the answer */
	L_ABANDONED, /* the server stopped: the holder's send only frees */
};

struct http_later {
	pthread_mutex_t mu;
	int refs;
	enum later_state state;
	bool suspended; /* the connection is suspended and nobody resumed it yet */
	int status;
	struct http_req *req; /* NULL once the request is done with the later */
	struct http_resp resp;
};

static void later_unref(struct http_later *l)
{
	bool last;

	pthread_mutex_lock(&l->mu);
	last = --l->refs == 0;
	pthread_mutex_unlock(&l->mu);
	if (!last)
		return;
	http__resp_release(&l->resp);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

/* With l->mu held: resume the connection once, whoever comes first. */
static void resume_locked(struct http_later *l)
{
	if (l->suspended && l->req) {
		l->suspended = false;
		MHD_resume_connection(l->req->c);
	}
}

struct http_later *http_resp_defer(struct http_resp *resp)
{
	struct http_req *r = resp->req;
	struct http_later *l = xcalloc(1, sizeof(*l));

	assert(resp->stream == NULL && r->later == NULL);
	pthread_mutex_init(&l->mu, NULL);
	l->refs = 2; /* the request's and the holder's */
	l->req = r;
	l->resp = *resp; /* moved: the handler's response is empty from now on */
	memset(&resp->headers, 0, sizeof(resp->headers));
	buf_init(&resp->body, 0);
	resp->upgrade = NULL;
	resp->up_fn = NULL;
	resp->up_ud = NULL;
	resp->deferred = true;
	r->later = l;
	/* lock order: the server's mu, then the later's, then libmicrohttpd's */
	pthread_mutex_lock(&r->s->mu);
	vec_push(&r->s->laters, l);
	pthread_mutex_lock(&l->mu);
	l->state = r->s->stopping ? L_ABANDONED : L_PENDING;
	l->suspended = true;
	MHD_suspend_connection(r->c);
	if (l->state == L_ABANDONED)
		resume_locked(l);
	pthread_mutex_unlock(&l->mu);
	pthread_mutex_unlock(&r->s->mu);
	return l;
}

struct http_resp *http_later_resp(struct http_later *l)
{
	return &l->resp;
}

void http_later_send(struct http_later *l, int status)
{
	pthread_mutex_lock(&l->mu);
	if (l->state == L_PENDING) {
		l->state = L_READY;
		l->status =
		        status >= 100 && status <= 599 ? status : MHD_HTTP_INTERNAL_SERVER_ERROR;
		resume_locked(l);
	}
	pthread_mutex_unlock(&l->mu);
	later_unref(l);
}

static void forget(struct http_req *r)
{
	struct http_later *l = r->later;

	pthread_mutex_lock(&r->s->mu);
	for (size_t i = 0; i < r->s->laters.len; i++)
		if (r->s->laters.v[i] == l) {
			r->s->laters.v[i] = r->s->laters.v[--r->s->laters.len];
			break;
		}
	pthread_mutex_unlock(&r->s->mu);
	pthread_mutex_lock(&l->mu);
	l->req = NULL;
	pthread_mutex_unlock(&l->mu);
	r->later = NULL;
	later_unref(l);
}

enum MHD_Result http__later_answer(struct http_req *r)
{
	struct http_later *l = r->later;
	struct http_resp stopped = {.req = r, .body = BUF_INIT(64)};
	enum MHD_Result ret;
	bool ready;

	pthread_mutex_lock(&l->mu);
	ready = l->state == L_READY;
	pthread_mutex_unlock(&l->mu);
	if (ready) {
		ret = http__send_response(&l->resp, (unsigned int)l->status);
	} else {
		buf_append_str(&stopped.body, "the server is stopping\n");
		ret = http__send_response(&stopped, MHD_HTTP_SERVICE_UNAVAILABLE);
		http__resp_release(&stopped);
	}
	forget(r);
	return ret;
}

void http__later_request_done(struct http_req *r)
{
	if (r->later)
		forget(r);
}

void http__laters_cancel(struct http_server *s)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->laters.len; i++) {
		struct http_later *l = s->laters.v[i];

		pthread_mutex_lock(&l->mu);
		if (l->state == L_PENDING)
			l->state = L_ABANDONED;
		resume_locked(l);
		pthread_mutex_unlock(&l->mu);
	}
	pthread_mutex_unlock(&s->mu);
}
