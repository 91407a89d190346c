{{/* Names: <release>-quotascope unless the release name already contains it. */}}
{{- define "quotascope.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "quotascope.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: quotascope
{{- end -}}

{{/* Selector labels of one component: call with (dict "root" $ "component" "agent"). */}}
{{- define "quotascope.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "quotascope.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The label whose value the ServiceMonitor turns into `job`: the dashboards and rules select on it. */}}
{{- define "quotascope.jobLabel" -}}quotascope.dev/job{{- end -}}

{{- define "quotascope.providerUrl" -}}
{{- if .Values.agent.provider.url -}}
{{- .Values.agent.provider.url -}}
{{- else if .Values.mockProvider.enabled -}}
{{- printf "http://%s-mock-provider:%d" (include "quotascope.fullname" .) (int .Values.mockProvider.port) -}}
{{- else -}}
{{- fail "agent.provider.url: required when mockProvider.enabled is false" -}}
{{- end -}}
{{- end -}}

{{/* Share of the fleet budget per pod: limiter.replicaShare, else 1/replicas. */}}
{{- define "quotascope.replicaShare" -}}
{{- if .Values.limiter.replicaShare -}}
{{- .Values.limiter.replicaShare -}}
{{- else -}}
{{- divf 1 (int .Values.agent.replicas) -}}
{{- end -}}
{{- end -}}

{{/* The env variables of the agent container's command: QUOTASCOPE_<COMMAND>_<FLAG> (serve or agent). */}}
{{- define "quotascope.agentEnvPrefix" -}}
{{- if eq .Values.agent.mode "serve" -}}QUOTASCOPE_SERVE_{{- else -}}QUOTASCOPE_AGENT_{{- end -}}
{{- end -}}

{{/* The Redis URL env entry (--redis-url) for central mode. */}}
{{- define "quotascope.redisUrlEnv" -}}
- name: {{ include "quotascope.agentEnvPrefix" . }}REDIS_URL
{{- if .Values.redis.enabled }}
  value: {{ printf "redis://%s-redis:%d" (include "quotascope.fullname" .) (int .Values.redis.port) | quote }}
{{- else if .Values.redis.externalUrlSecret.name }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.externalUrlSecret.name }}
      key: {{ .Values.redis.externalUrlSecret.key }}
{{- else if .Values.redis.externalUrl }}
  value: {{ .Values.redis.externalUrl | quote }}
{{- else }}
{{- fail "limiter.quotaSharing central: set redis.enabled, redis.externalUrl or redis.externalUrlSecret.name" }}
{{- end }}
{{- end -}}
