/* jdoc_table.c - the strings a jdoc stores as table indexes instead of bytes (see jdoc_impl.h). */
#include <string.h>

#include "base/jdoc.h"
#include "base/jdoc_impl.h"

#define TSTR_MAX_LEN 32

/* Kubernetes' most common keys and short values; must stay sorted (bytewise) and unique. */
const char *const jdoc__table[] = {
        "",
        "-",
        ".",
        "Active",
        "Apply",
        "ClusterIP",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "DoesNotExist",
        "Egress",
        "Exists",
        "False",
        "FieldsV1",
        "Group",
        "In",
        "Ingress",
        "LimitRange",
        "List",
        "Namespace",
        "NetworkPolicy",
        "NotIn",
        "Opaque",
        "Pod",
        "ResourceQuota",
        "Role",
        "RoleBinding",
        "Secret",
        "Service",
        "ServiceAccount",
        "TCP",
        "Terminating",
        "True",
        "UDP",
        "Unknown",
        "Update",
        "User",
        "annotations",
        "apiGroup",
        "apiGroups",
        "apiVersion",
        "apps/v1",
        "binaryData",
        "blockOwnerDeletion",
        "conditions",
        "containers",
        "continue",
        "controller",
        "cpu",
        "creationTimestamp",
        "data",
        "default",
        "deletionGracePeriodSeconds",
        "deletionTimestamp",
        "egress",
        "f:annotations",
        "f:data",
        "f:finalizers",
        "f:labels",
        "f:metadata",
        "f:phase",
        "f:spec",
        "f:status",
        "fieldsType",
        "fieldsV1",
        "finalizers",
        "from",
        "generateName",
        "generation",
        "hard",
        "image",
        "ingress",
        "items",
        "key",
        "kind",
        "kube-controller-manager",
        "kube-system",
        "kubectl-client-side-apply",
        "kubernetes",
        "kubernetes.io/metadata.name",
        "labels",
        "landlord",
        "lastTransitionTime",
        "limits",
        "managedFields",
        "manager",
        "matchExpressions",
        "matchLabels",
        "memory",
        "message",
        "metadata",
        "name",
        "namespace",
        "namespaceSelector",
        "networking.k8s.io/v1",
        "observedGeneration",
        "operation",
        "operator",
        "ownerReferences",
        "phase",
        "podSelector",
        "policyTypes",
        "ports",
        "protocol",
        "rbac.authorization.k8s.io",
        "rbac.authorization.k8s.io/v1",
        "reason",
        "remainingItemCount",
        "requests",
        "resourceVersion",
        "resources",
        "roleRef",
        "rules",
        "scopeSelector",
        "scopes",
        "selector",
        "spec",
        "status",
        "subjects",
        "subresource",
        "time",
        "to",
        "type",
        "uid",
        "used",
        "v1",
        "value",
        "values",
        "verbs",
};
#define TABLE_LEN (sizeof(jdoc__table) / sizeof(jdoc__table[0]))

bool jdoc__table_sorted(void)
{
	for (size_t i = 1; i < TABLE_LEN; i++)
		if (jdoc__bytes_cmp(jdoc__table[i - 1], strlen(jdoc__table[i - 1]), jdoc__table[i],
		                    strlen(jdoc__table[i])) >= 0)
			return false;
	return TABLE_LEN <= LEN_MAX;
}

/* Index of @s in the table, or -1. */
int jdoc__table_find(const char *s, size_t len)
{
	size_t lo = 0, hi = TABLE_LEN;

	if (len > TSTR_MAX_LEN)
		return -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = jdoc__bytes_cmp(s, len, jdoc__table[mid], strlen(jdoc__table[mid]));

		if (c == 0)
			return (int)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}
