/*
 * later.h - answers given later, from another thread: for handlers that must wait on something
 * slow (the tenant proxy waits on the API server) without blocking the server thread, which
 * serves every connection.
 *
 * A handler calls http_resp_defer() and returns; its return value is then ignored. The server
 * suspends the connection (libmicrohttpd neither polls it nor times it out meanwhile) and
 * serves others. Another thread, holding the struct http_later, fills the response through
 * http_later_resp() (headers, a body, a stream, an upgrade: http_resp_stream() and
 * http_resp_upgrade() work on it as in a handler) and calls http_later_send() exactly once.
 * The request is not the holder's: a server that stops frees it while the answer is pending,
 * so the handler copies what the holder will need before it returns. The server thread
 * then queues the answer as if the handler had returned it.
 *
 * Ownership: a later has two references, the request's and the holder's; http_later_send()
 * drops the holder's, so the later is gone for the caller. Stopping the server while answers
 * are pending (http_server_free()) answers each 503 and marks it abandoned: the holder's
 * http_later_send() then only frees, and a stream it opened is closed (pushes fail
 * -ECANCELED). A client that hangs up while its answer is pending is noticed when the answer
 * is sent.
 *
 * Thread-safety: one holder at a time uses the later; http_later_send() may race with the
 * server's stop, and one of them wins under the later's lock.
 */
#ifndef LANDLORD_HTTP_LATER_H
#define LANDLORD_HTTP_LATER_H

struct http_resp;
struct http_later;

/**
 * http_resp_defer() - in a handler: answer @resp later. At most once per response; not with a
 * stream already taken. Return: the holder's reference (never NULL).
 */
struct http_later *http_resp_defer(struct http_resp *resp);
/** http_later_resp() - the response to fill, by the holder until http_later_send(). */
struct http_resp *http_later_resp(struct http_later *l);
/**
 * http_later_send() - answer with @status (outside 100..599: 500) what the response holds,
 * and drop the holder's reference. Thread-safe against the server; never blocks on I/O.
 */
void http_later_send(struct http_later *l, int status);

#endif
