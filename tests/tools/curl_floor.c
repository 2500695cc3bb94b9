/*
 * curl_floor - the memory floor for an idle landlord: a process that only initialises Debian's
 * libcurl (and, with --url, makes one HTTPS request with a client certificate, as landlord's
 * client does at start), then waits for SIGTERM. bench/idle.py reads its /proc/PID/smaps next to
 * landlord's.
 *
 *   curl_floor [--url URL --cacert CA --cert CRT --key KEY]
 *
 * Prints "ready" on stdout once initialised (and the request answered), then pauses.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

static size_t discard(char *data, size_t size, size_t n, void *ud)
{
	(void)data;
	(void)ud;
	return size * n;
}

static int request(const char *url, const char *ca, const char *cert, const char *key)
{
	CURL *easy = curl_easy_init();
	CURLcode rc;

	if (easy == NULL)
		return 1;
	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_CAINFO, ca);
	curl_easy_setopt(easy, CURLOPT_SSLCERT, cert);
	curl_easy_setopt(easy, CURLOPT_SSLKEY, key);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
	rc = curl_easy_perform(easy);
	if (rc != CURLE_OK)
		fprintf(stderr, "curl_floor: %s: %s\n", url, curl_easy_strerror(rc));
	curl_easy_cleanup(easy); /* landlord keeps its connections; the floor keeps none */
	return rc == CURLE_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *url = NULL, *ca = NULL, *cert = NULL, *key = NULL;
	sigset_t set;
	int sig;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--url") == 0)
			url = argv[i + 1];
		else if (strcmp(argv[i], "--cacert") == 0)
			ca = argv[i + 1];
		else if (strcmp(argv[i], "--cert") == 0)
			cert = argv[i + 1];
		else if (strcmp(argv[i], "--key") == 0)
			key = argv[i + 1];
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	if (url && request(url, ca, cert, key) != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigwait(&set, &sig);
	curl_global_cleanup();
	return 0;
}
