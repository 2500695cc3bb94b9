/*
 * rules.c - every admission rule landlord's webhook enforces, in one table.
 *
 * This table is the one place to add a rule. `landlord webhook` and `landlord run` serve it on
 * POST /validate (webhook_mutations on POST /mutate). For each AdmissionReview, every row
 * whose resources and operations match the request runs its validator, in table order, and
 * the first denial wins.
 *
 * To add a rule:
 *   1. write its validator, `static void name(const json_t *request,
 *      struct admission_verdict *v, void *ud)`: read the AdmissionRequest (request.object,
 *      request.oldObject, request.userInfo...) and deny by setting v->allowed = false, a
 *      message the user will read and, if not 403, v->code. A validator of more than a few
 *      lines goes in its own file, src/webhook/rule_<name>.c, declared in rules.h. Pure
 *      decisions belong in src/tenancy, so that the controllers can share them;
 *   2. add a row below: its name, the resources it applies to ("namespaces",
 *      "landlord.dev/tenants", "pods/exec" for a subresource), the operations, the validator;
 *   3. test the validator in tests/unit/test_rules.c through admission_review(), and add the
 *      resources and operations to the chart's deploy/chart/templates/webhooks.yaml, then
 *      scripts/render-webhooks.py --write (deploy/webhooks.json, which landlord registers with
 *      --webhook-url), or the API server will never send those requests.
 *
 *	{"tenant-name-immutable", (const char *const[]){"landlord.dev/tenants", NULL},
 *	 ADMISSION_UPDATE, tenant_name_immutable},
 *
 * This build has no rule yet: the policies in deploy/policies/ are ValidatingAdmissionPolicies
 * that the API server evaluates itself.
 */
#include <stddef.h>

#include "webhook/admission.h"
#include "webhook/rules.h"

const struct admission_rule webhook_rules[] = {
        {.name = NULL}, /* the end */
};

const struct admission_rule webhook_mutations[] = {
        {.name = NULL}, /* the end */
};
