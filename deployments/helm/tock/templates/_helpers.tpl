{{/* The release's name, with the chart's when the release does not hold it. */}}
{{- define "tock.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 53 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 53 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* A component's selector: dict "root" $ "component" name. */}}
{{- define "tock.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "tock.labels" -}}
{{ include "tock.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "tock.image" -}}
{{- $c := index .root.Values .component -}}
{{- $image := .root.Values.image -}}
{{- $c.image | default (printf "%s/%s:%s" $image.repository .component ($image.tag | default .root.Chart.AppVersion)) -}}
{{- end -}}

{{/* A number from values is a float64 to templates: 33554432 would print as 3.3554432e+07. */}}
{{- define "tock.envValue" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) -}}
{{- int64 . -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end -}}

{{/*
tock.envLayer turns one level's config and secretEnv into EnvVar bodies by
name; a name in both is a mistake, not a precedence to guess.
*/}}
{{- define "tock.envLayer" -}}
{{- $out := dict -}}
{{- range $name, $value := .config | default dict -}}
{{- $_ := set $out $name (dict "value" (include "tock.envValue" $value)) -}}
{{- end -}}
{{- $where := .where -}}
{{- range $name, $ref := .secretEnv | default dict -}}
{{- if hasKey $out $name -}}
{{- fail (printf "%s is in both %sconfig and %ssecretEnv: keep one (null removes a default)" $name $where $where) -}}
{{- end -}}
{{- $_ := set $out $name (dict "valueFrom" (dict "secretKeyRef" $ref)) -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
tock.owned is what the chart sets itself, from the values the pods depend on
(the listeners on the ports the probes and Services use, the worker's
shutdown grace under its pod's termination grace period): name -> its value
and the value that sets it.
*/}}
{{- define "tock.owned" -}}
{{- $c := index .root.Values .component -}}
TOCK_METRICS_ADDR:
  value: {{ printf "0.0.0.0:%d" (int $c.ports.metrics) | quote }}
  from: {{ .component }}.ports.metrics
{{- if eq .component "dashboard" }}
TOCK_HTTP_ADDR:
  value: {{ printf "%s:%d" (.httpHost | default "0.0.0.0") (int $c.ports.http) | quote }}
  from: dashboard.ports.http
{{- end }}
{{- if eq .component "worker" }}
TOCK_SHUTDOWN_GRACE:
  value: {{ printf "%ds" (int $c.shutdownGraceSeconds) | quote }}
  from: worker.shutdownGraceSeconds
{{- end }}
{{- end -}}

{{/* GOMEMLIMIT at 90 % of a memory limit given in Mi or Gi, as ECS sets it; resources in. */}}
{{- define "tock.goMemLimit" -}}
{{- $limit := toString (dig "limits" "memory" "" (. | default dict)) -}}
{{- if regexMatch "^[0-9]+(Mi|Gi)$" $limit -}}
{{- $mib := mul (atoi (regexFind "^[0-9]+" $limit)) (ternary 1024 1 (hasSuffix "Gi" $limit)) -}}
{{ div (mul $mib 9) 10 }}MiB
{{- end -}}
{{- end -}}

{{/*
tock.env renders a component's environment, sorted by name so that a change
of order never restarts pods: the chart's own settings, the component's
config and secretEnv over the shared ones, and GOMEMLIMIT unless set.
dict "root" $ "component" name [ "httpHost" host ] [ "resources" r ].
*/}}
{{- define "tock.env" -}}
{{- $v := .root.Values -}}
{{- $c := index $v .component -}}
{{- $shared := include "tock.envLayer" (dict "config" $v.config "secretEnv" $v.secretEnv "where" "") | fromYaml -}}
{{- $own := include "tock.envLayer" (dict "config" $c.config "secretEnv" $c.secretEnv "where" (printf "%s." .component)) | fromYaml -}}
{{- range $name := list "TOCK_REDIS_PREFIX" "TOCK_REDIS_SHARDS" "TOCK_REDIS_CLUSTER" "TOCK_REDIS_ADDRS" -}}
{{- if or (hasKey $own $name) (hasKey ($v.secretEnv | default dict) $name) -}}
{{- fail (printf "%s must be the same in every service, and the KEDA trigger reads it: set it under config only" $name) -}}
{{- end -}}
{{- end -}}
{{- $owned := dict -}}
{{- range $name, $o := include "tock.owned" . | fromYaml -}}
{{- if or (hasKey $shared $name) (hasKey $own $name) -}}
{{- fail (printf "%s is set by the chart from %s: set that instead" $name $o.from) -}}
{{- end -}}
{{- $_ := set $owned $name (dict "value" $o.value) -}}
{{- end -}}
{{- $defaults := dict -}}
{{- with include "tock.goMemLimit" (.resources | default $c.resources) -}}
{{- $_ := set $defaults "GOMEMLIMIT" (dict "value" .) -}}
{{- end -}}
{{- /* Later layers win, whole: a component's secret replaces a shared plain value. */ -}}
{{- $env := dict -}}
{{- range $layer := list $defaults $shared $own $owned -}}
{{- range $name, $body := $layer -}}
{{- $_ := set $env $name $body -}}
{{- end -}}
{{- end -}}
{{- $list := list -}}
{{- range $name, $body := $env -}}
{{- $list = append $list (merge (dict "name" $name) $body) -}}
{{- end -}}
{{- toYaml $list -}}
{{- end -}}

{{/* Pod settings every component shares: dict "root" $ "component" name. */}}
{{- define "tock.podSettings" -}}
{{- $v := .root.Values -}}
{{- $c := index $v .component -}}
automountServiceAccountToken: false
{{- with $v.serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
{{- with $v.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
securityContext: {{- toYaml $v.podSecurityContext | nindent 2 }}
{{- with $c.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- range $key := list "nodeSelector" "tolerations" "affinity" "topologySpreadConstraints" "volumes" }}
{{- with index $c $key }}
{{ $key }}: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- end -}}
