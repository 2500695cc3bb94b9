/* fieldrules.c - the namespace fields of the built-in kinds and their fate (fieldrules.h). */
#include "proxy/fieldrules.h"

#include <string.h>

const struct px_field_rule px_field_rules[] = {
        /* Converted by px_convert() (convert.h), both ways. */
        {"*", "metadata.namespace", PX_FIELD_CONVERTED, "every object's own namespace (convert.h)"},
        {"core.Event", "involvedObject.namespace", PX_FIELD_CONVERTED,
         "convert.h: Events, core and events.k8s.io"},
        {"core.Event", "related.namespace", PX_FIELD_CONVERTED,
         "convert.h: Events, core and events.k8s.io"},
        {"events.Event", "regarding.namespace", PX_FIELD_CONVERTED,
         "convert.h: Events, core and events.k8s.io"},
        {"events.Event", "related.namespace", PX_FIELD_CONVERTED,
         "convert.h: Events, core and events.k8s.io"},
        {"authorization.SelfSubjectAccessReview", "spec.resourceAttributes.namespace",
         PX_FIELD_CONVERTED, "convert.h: the SubjectAccessReview kinds"},
        {"authorization.LocalSubjectAccessReview", "spec.resourceAttributes.namespace",
         PX_FIELD_CONVERTED, "convert.h: the SubjectAccessReview kinds"},
        {"authorization.SelfSubjectRulesReview", "spec.namespace", PX_FIELD_CONVERTED,
         "convert.h: SelfSubjectRulesReview"},
        {"rbac.Subject", "namespace", PX_FIELD_CONVERTED,
         "convert.h: a RoleBinding subject's namespace (and the namespace in a ServiceAccount's "
         "user or group name)"},
        {"core.PodAffinityTerm", "namespaces", PX_FIELD_CONVERTED,
         "convert.h: every pod spec's affinity terms; another namespace is refused"},
        {"core.PodAffinityTerm", "namespaceSelector", PX_FIELD_CONVERTED,
         "convert.h: by kubernetes.io/metadata.name only, In the tenant's namespaces (converted); "
         "anything else, an empty selector first, is refused"},
        {"networking.NetworkPolicyPeer", "namespaceSelector", PX_FIELD_CONVERTED,
         "convert.h: kubernetes.io/metadata.name values that are the tenant's shown names are "
         "converted; other values are kept, upstream names (a policy may admit a platform "
         "namespace's traffic, which concerns only the tenant's own pods)"},
        /* Known holes, to convert: until then the tenant reads and must write upstream names. */
        {"core.EndpointAddress", "targetRef.namespace", PX_FIELD_GAP,
         "the Pod behind an address, in the Endpoints' own namespace: shows the upstream name"},
        {"discovery.Endpoint", "targetRef.namespace", PX_FIELD_GAP,
         "the Pod behind an endpoint, in the EndpointSlice's own namespace: shows the upstream "
         "name"},
        {"batch.CronJobStatus", "active[].namespace", PX_FIELD_GAP,
         "the CronJob's running Jobs, in its own namespace: shows the upstream name"},
        {"core.ServiceAccount", "secrets[].namespace", PX_FIELD_GAP,
         "the ServiceAccount's Secrets, in its own namespace (ignored by the API server): shows "
         "the upstream name"},
        {"core.PersistentVolumeClaimSpec", "dataSourceRef.namespace", PX_FIELD_GAP,
         "a cross-namespace data source (CrossNamespaceVolumeDataSource): a tenant's shown name, "
         "upstream the full one"},
        /* Nothing to convert. */
        {"core.Binding", "target.namespace", PX_FIELD_EXEMPT,
         "the target is a Node, cluster-scoped: the namespace is unused"},
        {"meta.ObjectMeta", "namespace", PX_FIELD_EXEMPT,
         "an embedded template's namespace: refused (ephemeral volume and resource claim "
         "templates) or ignored (pod, job and StatefulSet claim templates) by the API server; "
         "the objects are made in the owner's namespace"},
        {"core.PodSpec", "shareProcessNamespace", PX_FIELD_EXEMPT,
         "a Linux PID namespace, not a Kubernetes one"},
        {"core.StorageOSVolumeSource", "volumeNamespace", PX_FIELD_EXEMPT,
         "StorageOS's own volume namespace, a name in the storage system, not a Kubernetes "
         "namespace"},
        {"core.NodeRuntimeHandlerFeatures", "userNamespaces", PX_FIELD_EXEMPT,
         "whether the runtime supports Linux user namespaces: not a Kubernetes namespace"},
        {"core.ConfigMapNodeConfigSource", "namespace", PX_FIELD_EXEMPT,
         "a read-only Node, shown as the platform wrote it: its ConfigMap is in a platform "
         "namespace (kube-system)"},
        {"networking.IngressClass", "spec.parameters.namespace", PX_FIELD_EXEMPT,
         "a read-only class, shown as the platform wrote it: its parameters are in a platform "
         "namespace"},
        {"meta.OwnerReference", "", PX_FIELD_EXEMPT,
         "no namespace: an owner is in the object's own namespace or cluster-scoped"},
        {"core.LocalObjectReference", "", PX_FIELD_EXEMPT,
         "no namespace: names an object of the same namespace"},
        {"core.TypedLocalObjectReference", "", PX_FIELD_EXEMPT,
         "no namespace: names an object of the same namespace"},
        {"autoscaling.CrossVersionObjectReference", "", PX_FIELD_EXEMPT,
         "no namespace: the scale target or described object is in the autoscaler's namespace"},
        {"authentication.BoundObjectReference", "", PX_FIELD_EXEMPT,
         "no namespace: a Pod, Secret or Node the token is bound to, in the ServiceAccount's "
         "namespace or cluster-scoped"},
        {"rbac.RoleRef", "", PX_FIELD_EXEMPT,
         "no namespace: a Role of the binding's namespace or a ClusterRole"},
        {"resource.ResourceClaimConsumerReference", "", PX_FIELD_EXEMPT,
         "no namespace: a consumer in the claim's namespace"},
};

const size_t px_field_rules_len = sizeof(px_field_rules) / sizeof(px_field_rules[0]);

const struct px_field_rule *px_field_rule_find(const char *scope, const char *path)
{
	for (size_t i = 0; scope && path && i < px_field_rules_len; i++) {
		if (strcmp(px_field_rules[i].scope, scope) == 0 &&
		    strcmp(px_field_rules[i].path, path) == 0)
			return &px_field_rules[i];
	}
	return NULL;
}
