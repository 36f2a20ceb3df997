{{- define "drd.name" -}}{{ .Release.Name | trunc 50 | trimSuffix "-" }}{{- end -}}
{{- define "drd.serviceAccount" -}}{{ include "drd.name" . }}-kubelet-plugin{{- end -}}
{{- define "drd.labels" -}}
app.kubernetes.io/name: dra-reference-driver
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}
{{- define "drd.selector" -}}
app.kubernetes.io/name: dra-reference-driver
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
