/*
 * fuzz_helm_record.c - any bytes as a Helm release record's data.release decode to a release or
 * to nothing, without crashing; any text as a release's manifest gives objects whose keys are
 * "<apiVersion>/<Kind>/<namespace>/<name>" with their kind as the key's start. The manifest
 * comes from a JSON string, so only valid UTF-8 is given to it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "templates/ledger.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	json_t *objs, *kind, *valid;
	const char *key;

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	valid = json_stringn(text, size); /* a manifest is a JSON string: valid UTF-8 */

	json_decref(helm_record_decode(text));
	objs = valid != NULL ? helm_manifest_objects(text, "ns") : json_object();
	json_decref(valid);
	json_object_foreach(objs, key, kind) {
		const char *k = json_string_value(kind);

		if (k == NULL || strncmp(key, k, strlen(k)) != 0 || key[strlen(k)] != '/')
			abort();
	}
	json_decref(objs);
	free(text);
	return 0;
}
