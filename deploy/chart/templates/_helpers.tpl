{{/*
landlord's namespace and service account are compiled into landlord and named by the admission
policies (files/policies), so the chart installs into landlord-system only.
*/}}
{{- define "landlord.namespace" -}}
{{- if ne .Release.Namespace "landlord-system" -}}
{{- fail (printf "install landlord into the namespace landlord-system (helm install -n landlord-system --create-namespace), not %q: landlord and its admission policies name it" .Release.Namespace) -}}
{{- end -}}
landlord-system
{{- end -}}

{{- define "landlord.labels" -}}
app.kubernetes.io/name: landlord
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "landlord.selector" -}}
app.kubernetes.io/name: landlord
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
CEL: whether the requester is exempt from the pod rules: landlord itself and the privileged
subjects of values.webhook.exempt. Strings are JSON-quoted, which CEL reads as string literals.
*/}}
{{- define "landlord.privileged" -}}
request.userInfo.username == {{ printf "system:serviceaccount:%s:landlord" (include "landlord.namespace" .) | toJson }}
{{- range .Values.webhook.exempt.users }} || request.userInfo.username == {{ . | toJson }}{{ end }}
{{- with .Values.webhook.exempt.groups }} || (has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in {{ . | toJson }})){{ end }}
{{- end -}}

{{/*
CEL: whether the requester is exempt from every rule but the pod rules: the privileged ones, the
nodes, kube-controller-manager and the controllers of kube-system (issue 12, point 5).
*/}}
{{- define "landlord.exempt" -}}
{{ include "landlord.privileged" . }} || request.userInfo.username == 'system:kube-controller-manager' || request.userInfo.username.startsWith('system:serviceaccount:kube-system:') || (has(request.userInfo.groups) && 'system:nodes' in request.userInfo.groups)
{{- end -}}

{{/*
landlord itself and the cluster's components, but not the privileged subjects: the writers that
keep a TemplateInstance's landlord.dev/last-writer as it was (a finalizer, garbage collection),
and that the Template check leaves alone.
*/}}
{{- define "landlord.components" -}}
request.userInfo.username == {{ printf "system:serviceaccount:%s:landlord" (include "landlord.namespace" .) | toJson }} || request.userInfo.username == 'system:kube-controller-manager' || request.userInfo.username.startsWith('system:serviceaccount:kube-system:') || (has(request.userInfo.groups) && 'system:nodes' in request.userInfo.groups)
{{- end -}}

{{/* Namespace CREATE: every name but the system's and landlord's own, by the label the API server sets. */}}
{{- define "landlord.namespaceCreateSelector" -}}
matchExpressions:
- key: kubernetes.io/metadata.name
  operator: NotIn
  values: [kube-system, kube-public, kube-node-lease, default, {{ include "landlord.namespace" . }}]
{{- end -}}

{{- define "landlord.clientConfig" -}}
# No caBundle: landlord writes it at run time; neither upgrade nor server-side apply touch a
# field the chart does not render.
service:
  name: landlord
  namespace: {{ include "landlord.namespace" .root }}
  port: {{ .root.Values.service.port }}
  path: {{ .path }}
{{- end -}}
