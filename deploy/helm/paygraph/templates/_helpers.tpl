{{/* Names and labels shared by the templates. */}}

{{- define "paygraph.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The pods' selector: the kustomize base's app.kubernetes.io/name plus the release. */}}
{{- define "paygraph.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "paygraph.labels" -}}
{{ include "paygraph.selectorLabels" . }}
app.kubernetes.io/component: graphql-gateway
app.kubernetes.io/part-of: payments
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "paygraph.cursorSecret" -}}
{{- .Values.cursorKeys.existingSecret | default (printf "%s-cursor-keys" (include "paygraph.fullname" .)) -}}
{{- end -}}

{{- define "paygraph.tokenSecret" -}}
{{- .Values.tokenKeys.existingSecret | default (printf "%s-token-keys" (include "paygraph.fullname" .)) -}}
{{- end -}}

{{- define "paygraph.merchantIDSecret" -}}
{{- .Values.merchantIdKey.existingSecret | default (printf "%s-merchant-id-key" (include "paygraph.fullname" .)) -}}
{{- end -}}

{{- define "paygraph.redisName" -}}
{{- printf "%s-redis" (include "paygraph.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
A random 32-byte key (sprig's randBytes: base64), as Secret data, for a Secret the chart makes: the one in the
cluster when there is one (kept across upgrades), else a new one.
Arguments: (list $ secretName key).
*/}}
{{- define "paygraph.keepOrMakeKey" -}}
{{- $ctx := index . 0 -}}
{{- $name := index . 1 -}}
{{- $key := index . 2 -}}
{{- $old := lookup "v1" "Secret" $ctx.Release.Namespace $name -}}
{{- if and $old (index $old.data $key) -}}
{{- index $old.data $key -}}
{{- else -}}
{{- randBytes 32 | b64enc -}}
{{- end -}}
{{- end -}}

{{- define "paygraph.redisSelectorLabels" -}}
app.kubernetes.io/name: {{ include "paygraph.redisName" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "paygraph.redisLabels" -}}
{{ include "paygraph.redisSelectorLabels" . }}
app.kubernetes.io/component: cache
app.kubernetes.io/part-of: payments
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
