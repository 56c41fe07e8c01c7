{{/* Names, labels and small helpers shared by the templates. */}}

{{- define "nodeprof.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* <release>-nodeprof, or the release name when it already contains the chart's name. */}}
{{- define "nodeprof.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "nodeprof.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodeprof.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "nodeprof.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "nodeprof.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "nodeprof.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nodeprof.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "nodeprof.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Where the Pyroscope credentials Secret is mounted, and the file the config reads. */}}
{{- define "nodeprof.authDir" -}}
/var/run/secrets/nodeprof/pyroscope
{{- end }}

{{- define "nodeprof.authKey" -}}
{{- if eq .Values.pyroscope.auth.type "basic" }}
{{- .Values.pyroscope.auth.passwordKey }}
{{- else }}
{{- .Values.pyroscope.auth.tokenKey }}
{{- end }}
{{- end }}

{{/* The configuration: the override when given, else the generated pipeline. */}}
{{- define "nodeprof.configText" -}}
{{- if .Values.configOverride }}
{{- .Values.configOverride }}
{{- else }}
{{- include "nodeprof.config" . }}
{{- end }}
{{- end }}
