/* k8sname.c - names, label keys and label values as the API server validates them (see .h). */
#include <string.h>

#include "kube/k8sname.h"

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? without a length bound. */
static bool is_label_shape(const char *s, size_t len)
{
	if (len == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
		return false;
	for (size_t i = 1; i + 1 < len; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

/* [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? without a length bound. */
static bool is_name_shape(const char *s, size_t len)
{
	if (len == 0 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return false;
	for (size_t i = 1; i + 1 < len; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

const char *k8s_dns_label_problem(const char *s, size_t len)
{
	if (len > K8S_DNS_LABEL_MAX)
		return "must be no more than 63 characters";
	if (!is_label_shape(s, len))
		return "a lowercase RFC 1123 label must consist of lower case alphanumeric "
		       "characters or '-', and must start and end with an alphanumeric character";
	return NULL;
}

#define SUBDOMAIN_TOO_LONG "must be no more than 253 characters"
#define SUBDOMAIN_SHAPE                                                                           \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' " \
	"or '.', and must start and end with an alphanumeric character"

const char *k8s_dns_subdomain_problem(const char *s, size_t len)
{
	size_t start = 0;

	if (len > K8S_DNS_SUBDOMAIN_MAX)
		return SUBDOMAIN_TOO_LONG;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.')
			continue;
		if (!is_label_shape(s + start, i - start))
			return SUBDOMAIN_SHAPE;
		start = i + 1;
	}
	return NULL;
}

const char *k8s_label_key_problem(const char *s, size_t len)
{
	const char *slash = memchr(s, '/', len), *name = s;
	size_t name_len = len;

	if (slash) {
		size_t prefix_len = (size_t)(slash - s);

		if (memchr(slash + 1, '/', len - prefix_len - 1))
			return "a qualified name must be a name with an optional DNS subdomain "
			       "prefix and '/' (e.g. 'example.com/MyName')";
		if (prefix_len == 0)
			return "prefix part must be non-empty";
		if (prefix_len > K8S_DNS_SUBDOMAIN_MAX)
			return "prefix part " SUBDOMAIN_TOO_LONG;
		if (k8s_dns_subdomain_problem(s, prefix_len))
			return "prefix part " SUBDOMAIN_SHAPE;
		name = slash + 1;
		name_len = len - prefix_len - 1;
	}
	if (name_len == 0)
		return "name part must be non-empty";
	if (name_len > K8S_LABEL_NAME_MAX)
		return "name part must be no more than 63 characters";
	if (!is_name_shape(name, name_len))
		return "name part must consist of alphanumeric characters, '-', '_' or '.', and "
		       "must start and end with an alphanumeric character";
	return NULL;
}

const char *k8s_label_value_problem(const char *s, size_t len)
{
	if (len > K8S_LABEL_VALUE_MAX)
		return "must be no more than 63 characters";
	if (len > 0 && !is_name_shape(s, len))
		return "a valid label must be an empty string or consist of alphanumeric "
		       "characters, '-', '_' or '.', and must start and end with an alphanumeric "
		       "character";
	return NULL;
}

const char *k8s_path_segment_problem(const char *s, size_t len)
{
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
		return "may not be '.' or '..'";
	if (memchr(s, '/', len) || memchr(s, '%', len))
		return "may not contain '/' or '%'";
	return NULL;
}

bool k8s_is_dns_label(const char *s)
{
	return k8s_dns_label_problem(s, strnlen(s, K8S_DNS_LABEL_MAX + 1)) == NULL;
}

bool k8s_is_label_value(const char *s)
{
	return k8s_label_value_problem(s, strnlen(s, K8S_LABEL_VALUE_MAX + 1)) == NULL;
}
