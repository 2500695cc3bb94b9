/*
 * yamljson.h - one YAML document read into a JSON tree the way Helm reads values.
 *
 * Helm (sigs.k8s.io/yaml over go-yaml v2) resolves plain scalars by YAML 1.1: null (~, null,
 * empty), booleans (true/false, yes/no, on/off, y/n in their three cases), integers (decimal,
 * 0x, 0o, 0b, a leading 0 for octal, "_" between digits) and floats. yaml_to_json() resolves
 * plain scalars the same way, so a tree it returns, written out as JSON, means to Helm what the
 * YAML text meant; quoted, literal and folded scalars, and !!str, are strings.
 *
 * Invariants:
 * - What could mean something else to Helm is refused, never guessed: aliases and merge keys
 *   (<<), tags other than !!str, !!map and !!seq, .inf and .nan (no JSON for them), a key that is
 *   not a scalar, a plain key that is not a string or a decimal integer as written (yes:, 0x1:),
 *   duplicate keys, a second document, nesting deeper than libfyaml's limit (64).
 * - Errors are one line, with the line number (1-based) where the parser knows it.
 * - Pure: no globals, no I/O; thread-safe. The caller bounds the text's length.
 */
#ifndef LANDLORD_YAMLJSON_H
#define LANDLORD_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

struct ll_err;

/**
 * yaml_to_json() - @len bytes of YAML @text (one document; empty or only comments: null) into
 * a new jansson tree in *@out (OUT; NULL on error).
 * Return: 0; -EINVAL (not YAML, or refused above; @err says why).
 */
int yaml_to_json(const char *text, size_t len, json_t **out /* OUT */, struct ll_err *err);

#endif
