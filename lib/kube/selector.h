/*
 * selector.h - Kubernetes label selectors.
 *
 * Two sources: the string form used in `labelSelector=` queries ("a=b,c!=d,e in (x,y),
 * f notin (z),g,!h", also "==" and the integer comparisons "n>1", "n<9") and the
 * metav1.LabelSelector object (matchLabels + matchExpressions with In, NotIn, Exists,
 * DoesNotExist). Semantics follow apimachinery:
 * an empty selector matches everything; a NULL (absent) LabelSelector object matches nothing;
 * requirements are ANDed; keys and values are validated (qualified names; values <= 63 chars).
 * A parsed selector is immutable and safe to share between threads.
 */
#ifndef LANDLORD_SELECTOR_H
#define LANDLORD_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>

struct ll_err;
struct buf;
struct sel;

/** sel_parse() - parse the string form. Return: 0 or -EINVAL with the reason in @err. */
int sel_parse(const char *s, struct sel **out /* OUT, sel_free() */, struct ll_err *err);
/**
 * sel_from_json() - build from a metav1.LabelSelector object. @ls NULL or JSON null gives a
 * selector that matches nothing. Return: 0 or -EINVAL (unknown operator, bad key or value).
 */
int sel_from_json(const json_t *ls, struct sel **out /* OUT, sel_free() */, struct ll_err *err);
/** sel_matches() - does the label map @labels (a JSON object or NULL = no labels) match? */
bool sel_matches(const struct sel *s, const json_t *labels);
/** The value of label @key (NUL-terminated, valid until the next call), or NULL when unset. */
typedef const char *(*sel_lookup_fn)(const char *key, void *ud);
/** sel_matches_lookup() - sel_matches() over labels kept elsewhere, read through @get. */
bool sel_matches_lookup(const struct sel *s, sel_lookup_fn get, void *ud);
bool sel_matches_nothing(const struct sel *s);
bool sel_is_empty(const struct sel *s);
/**
 * sel_to_string() - append the canonical string form (for a labelSelector= query): requirements
 * sorted, values sorted and unique, "==" written "=". sel_parse() reads it back unchanged.
 * Return: 0; -EINVAL for a selector that matches nothing (no string form selects nothing, and
 * "" would select everything); -EMSGSIZE when @out's cap is reached (@out is then unchanged).
 */
int sel_to_string(const struct sel *s, struct buf *out);
void sel_free(struct sel *s);

#endif
