/*
 * k8sname.h - Kubernetes' rules for names, label keys and label values, in one place.
 *
 * The same rules as apimachinery's validation (k8s.io/apimachinery/pkg/util/validation), so what
 * landlord accepts is what the API server accepts:
 *   DNS label (namespace names):       [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 bytes;
 *   DNS subdomain (most object names): DNS labels joined by '.', at most 253 bytes in all
 *                                      (apimachinery bounds the whole, not each label);
 *   label key (qualified name):        [prefix/]name: name is [A-Za-z0-9]([-A-Za-z0-9_.]*
 *                                      [A-Za-z0-9])? of at most 63 bytes, prefix a DNS subdomain;
 *   label value:                       empty, or the shape of a key's name part, at most 63 bytes;
 *   path segment name (any object name in a URL): not "." or "..", no '/' or '%'.
 * Each check takes a length (inputs need not be NUL-terminated) and returns NULL when the input
 * is valid, or a static sentence saying why not, worded like the API server's message so a user
 * sees the same reason either way. Pure and thread-safe.
 */
#ifndef LANDLORD_K8SNAME_H
#define LANDLORD_K8SNAME_H

#include <stdbool.h>
#include <stddef.h>

#define K8S_DNS_LABEL_MAX     63
#define K8S_DNS_SUBDOMAIN_MAX 253
#define K8S_LABEL_VALUE_MAX   63
#define K8S_LABEL_NAME_MAX    63

const char *k8s_dns_label_problem(const char *s, size_t len);
const char *k8s_dns_subdomain_problem(const char *s, size_t len);
const char *k8s_label_key_problem(const char *s, size_t len);
const char *k8s_label_value_problem(const char *s, size_t len);
const char *k8s_path_segment_problem(const char *s, size_t len);

/** k8s_is_dns_label() - shorthand: is NUL-terminated @s a DNS label? */
bool k8s_is_dns_label(const char *s);
/** k8s_is_label_value() - shorthand: is NUL-terminated @s a label value? */
bool k8s_is_label_value(const char *s);

#endif
