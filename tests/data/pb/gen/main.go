// Command gen writes the protobuf test bodies of tests/unit/test_pbconv.c: for each case
// <name>.pb (the object as kubectl 1.33's typed clients send it: client-go's scheme, the
// Kubernetes protobuf serializer, the client's group version), <name>.json (the same object
// in JSON, to read) and <name>.want.pb (the object with its namespaces shown as upstream names:
// "dev" as "acme-dev", "ci" as "acme-ci"; the same bytes as <name>.pb when it has none).
//
// Run from this directory: go run . ..   (writes into tests/data/pb/)
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// ns maps a namespace as the tenant shows it to its upstream name (or keeps it: the input).
type ns func(string) string

func keep(s string) string { return s }

func upstream(s string) string {
	switch s {
	case "dev", "ci":
		return "acme-" + s
	}
	return s
}

const nameLabel = "kubernetes.io/metadata.name"

var when = metav1.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)

func affinity(n ns) *corev1.Affinity {
	return &corev1.Affinity{
		PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
				Namespaces:    []string{n("dev"), n("ci")},
				TopologyKey:   "kubernetes.io/hostname",
				NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{nameLabel: n("dev"), "tier": "dev"},
				},
			}},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 10,
				PodAffinityTerm: corev1.PodAffinityTerm{
					Namespaces:  []string{n("ci")},
					TopologyKey: "topology.kubernetes.io/zone",
				},
			}},
		},
		PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				Namespaces:  []string{n("dev")},
				TopologyKey: "kubernetes.io/hostname",
			}},
		},
	}
}

func podSpec(n ns) corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:  "web",
			Image: "registry.example/web:1.0",
			Args:  []string{"--namespace", "dev"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("500m")}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}},
		}},
		Volumes: []corev1.Volume{{Name: "settings", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}},
		Affinity: affinity(n),
	}
}

type tcase struct {
	name string
	gv   schema.GroupVersion // the typed client's group version
	obj  func(n ns) runtime.Object
}

var cases = []tcase{
	{"configmap", corev1.SchemeGroupVersion, func(n ns) runtime.Object {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: n("dev"),
				Labels:      map[string]string{"app": "web"},
				Annotations: map[string]string{"note": "made in dev"}},
			Data:       map[string]string{"greeting": "hello", "namespace": "dev"},
			BinaryData: map[string][]byte{"blob": {0, 1, 2, 0xff}},
		}
	}},
	{"namespace", corev1.SchemeGroupVersion, func(n ns) runtime.Object {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n("dev"),
			Labels: map[string]string{nameLabel: n("dev"), "team": "dev"}}}
	}},
	{"rolebinding", rbacv1.SchemeGroupVersion, func(n ns) runtime.Object {
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "builders", Namespace: n("dev")},
			Subjects: []rbacv1.Subject{
				{Kind: "ServiceAccount", Name: "builder", Namespace: n("dev")},
				{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"},
				{Kind: "ServiceAccount", Name: "deployer", Namespace: n("ci")},
				{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "dev"},
			},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole",
				Name: "edit"},
		}
	}},
	{"pod", corev1.SchemeGroupVersion, func(n ns) runtime.Object {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: n("dev"),
				Labels: map[string]string{"app": "web"}},
			Spec: podSpec(n),
		}
	}},
	{"deployment", appsv1.SchemeGroupVersion, func(n ns) runtime.Object {
		replicas := int32(2)
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: n("dev")},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec:       podSpec(n),
				},
			},
		}
	}},
	{"networkpolicy", networkingv1.SchemeGroupVersion, func(n ns) runtime.Object {
		return &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "from-ci", Namespace: n("dev")},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{
						MatchLabels: map[string]string{nameLabel: n("ci")}},
				}}}},
			},
		}
	}},
	{"event", corev1.SchemeGroupVersion, func(n ns) runtime.Object {
		return &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: n("dev")},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: n("dev"), Name: "web",
				APIVersion: "v1"},
			Reason: "Started", Message: "pod dev/web started", Type: "Normal",
			Source:         corev1.EventSource{Component: "kubectl"},
			FirstTimestamp: when, LastTimestamp: when, Count: 1,
		}
	}},
	{"selfsubjectaccessreview", authzv1.SchemeGroupVersion, func(n ns) runtime.Object {
		return &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authzv1.ResourceAttributes{Namespace: n("dev"), Verb: "create",
				Resource: "configmaps"}}}
	}},
	{"tokenrequest", authnv1.SchemeGroupVersion, func(n ns) runtime.Object {
		secs := int64(3600)
		return &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
			Audiences: []string{"https://kubernetes.default.svc"}, ExpirationSeconds: &secs,
			BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1",
				Name: "web", UID: "0c1a3f5e-1111-2222-3333-444455556666"}}}
	}},
	{"deleteoptions", corev1.SchemeGroupVersion, func(n ns) runtime.Object {
		grace := int64(0)
		policy := metav1.DeletePropagationForeground
		uid := types.UID("0c1a3f5e-1111-2222-3333-444455556666")
		return &metav1.DeleteOptions{GracePeriodSeconds: &grace, PropagationPolicy: &policy,
			Preconditions: &metav1.Preconditions{UID: &uid}, DryRun: []string{"All"}}
	}},
	{"deleteoptions-rbac", rbacv1.SchemeGroupVersion, func(n ns) runtime.Object {
		policy := metav1.DeletePropagationBackground
		return &metav1.DeleteOptions{PropagationPolicy: &policy}
	}},
	{"eviction", policyv1.SchemeGroupVersion, func(n ns) runtime.Object {
		grace := int64(30)
		return &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Name: "web", Namespace: n("dev")},
			DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace},
		}
	}},
}

func encode(obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	codecs := rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(),
		runtime.ContentTypeProtobuf)
	if !ok {
		return nil, fmt.Errorf("no protobuf serializer")
	}
	var b bytes.Buffer
	err := codecs.EncoderForVersion(info.Serializer, gv).Encode(obj, &b)
	return b.Bytes(), err
}

func run(dir string) error {
	for _, c := range cases {
		in, err := encode(c.obj(keep), c.gv)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		want, err := encode(c.obj(upstream), c.gv)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		var unk runtime.Unknown // the envelope's apiVersion and kind, for the JSON
		if err := unk.Unmarshal(in[4:]); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		obj := c.obj(keep)
		obj.GetObjectKind().SetGroupVersionKind(
			schema.FromAPIVersionAndKind(unk.APIVersion, unk.Kind))
		text, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			return err
		}
		for name, data := range map[string][]byte{".pb": in, ".want.pb": want,
			".json": append(text, '\n')} {
			if err := os.WriteFile(filepath.Join(dir, c.name+name), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func main() {
	dir := ".."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
