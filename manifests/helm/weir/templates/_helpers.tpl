{{/* The chart's name. */}}
{{- define "weir.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name alone when it contains the chart's. */}}
{{- define "weir.fullname" -}}
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

{{/* The client Service's name in cluster DNS: <fullname>.<namespace>.svc.<clusterDomain>. */}}
{{- define "weir.serviceHost" -}}
{{- printf "%s.%s.svc.%s" (include "weir.fullname" .) .Release.Namespace .Values.clusterDomain }}
{{- end }}

{{/*
The full name and a suffix, (list . "-peers"), the full name cut so that the whole fits in 63
characters: a Service's name is a DNS label.
*/}}
{{- define "weir.suffixedName" -}}
{{- $suffix := index . 1 }}
{{- $base := include "weir.fullname" (index . 0) | trunc (int (sub 63 (len $suffix))) }}
{{- printf "%s%s" ($base | trimSuffix "-") $suffix }}
{{- end }}

{{/* The headless Service of Kubernetes discovery (WEIR_K8S_SERVICE_NAME). */}}
{{- define "weir.peersServiceName" -}}
{{- include "weir.suffixedName" (list . "-peers") }}
{{- end }}

{{/* The headless Service of DNS discovery (WEIR_DNS_FQDN). */}}
{{- define "weir.peersDnsServiceName" -}}
{{- include "weir.suffixedName" (list . "-peers-dns") }}
{{- end }}

{{/* The ClusterIP Service of the status listener under mutual TLS. */}}
{{- define "weir.statusServiceName" -}}
{{- include "weir.suffixedName" (list . "-status") }}
{{- end }}

{{- define "weir.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "weir.labels" -}}
helm.sh/chart: {{ include "weir.chart" . }}
{{ include "weir.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: weir
{{- end }}

{{/*
The chart's labels with more of them, (list . extra), as YAML; extra's win (a pod's or a monitor's
own labels).
*/}}
{{- define "weir.labelsWith" -}}
{{- $labels := include "weir.labels" (index . 0) | fromYaml }}
{{- mustMergeOverwrite $labels (index . 1 | default dict) | toYaml }}
{{- end }}

{{/*
The helm test pod's labels: the chart's without app.kubernetes.io/instance, so that no selector of
the nodes (Services, the pods watch, PodDisruptionBudget, NetworkPolicy, PodMonitor) takes it for
a node and puts it in the ring.
*/}}
{{- define "weir.testLabels" -}}
helm.sh/chart: {{ include "weir.chart" . }}
app.kubernetes.io/name: {{ include "weir.name" . }}
app.kubernetes.io/component: test
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: weir
{{- end }}

{{- define "weir.selectorLabels" -}}
app.kubernetes.io/name: {{ include "weir.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "weir.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "weir.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "weir.peerSecretName" -}}
{{- $created := printf "%s-peer-secret" (include "weir.fullname" .) }}
{{- default $created .Values.peerSecret.existingSecret }}
{{- end }}

{{/*
The chart's peer Secret's value (base64) from dict existing (the Secret found, empty when none) and
key (peerSecret.key): the existing value under key; else its only entry's (the key changed); else,
at install or when the entry to keep cannot be told, a new random one.
*/}}
{{- define "weir.peerSecretValue" -}}
{{- $data := dig "data" dict .existing }}
{{- if hasKey $data .key }}
{{- index $data .key }}
{{- else if eq (len $data) 1 }}
{{- values $data | first }}
{{- else }}
{{- randAlphaNum 48 | b64enc }}
{{- end }}
{{- end }}

{{- define "weir.configMapName" -}}
{{- default (printf "%s-config" (include "weir.fullname" .)) .Values.config.existingConfigMap }}
{{- end }}

{{- define "weir.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The container's gRPC port: 1051 serving, 8081 as envoyproxy/ratelimit. */}}
{{- define "weir.grpcPort" -}}
{{- if eq .Values.mode "ratelimit" }}8081{{ else }}1051{{ end }}
{{- end }}

{{/* The container's HTTP port: 1050 serving, 8080 as envoyproxy/ratelimit. */}}
{{- define "weir.httpPort" -}}
{{- if eq .Values.mode "ratelimit" }}8080{{ else }}1050{{ end }}
{{- end }}

{{/* true when clients must present a certificate, so probes and scrapes use the status port. */}}
{{- define "weir.mutualTls" -}}
{{- if and .Values.tls.enabled (eq .Values.tls.clientAuth "require-and-verify") }}true{{ end }}
{{- end }}

{{/* The container port probes and scrapes use. */}}
{{- define "weir.statusPortName" -}}
{{- if include "weir.mutualTls" . }}status{{ else }}http{{ end }}
{{- end }}

{{/* Fails on values the chart cannot render, naming the value and what is allowed. */}}
{{- define "weir.validate" -}}
{{- if not (has .Values.mode (list "weir" "ratelimit")) }}
{{- fail (printf "mode: %q is not valid: expected weir or ratelimit" .Values.mode) }}
{{- end }}
{{- if not (has .Values.discovery.type (list "k8s" "dns" "etcd")) }}
{{- fail (printf "discovery.type: %q is not valid: expected k8s, dns or etcd" .Values.discovery.type) }}
{{- end }}
{{- if and (eq .Values.discovery.type "etcd") (not (dig "etcd" "endpoints" list .Values.discovery)) }}
{{- fail (print "discovery.etcd.endpoints: [] is not valid with discovery.type=etcd: expected etcd's"
  " endpoints, each host:port, http://host:port or https://host:port") }}
{{- end }}
{{- $etcd := .Values.discovery.etcd | default dict }}
{{- $passwordSecret := dig "passwordSecret" "name" "" $etcd }}
{{- $userInExtraEnv := false }}
{{- range .Values.extraEnv }}
{{- if eq .name "WEIR_ETCD_USER" }}{{ $userInExtraEnv = true }}{{ end }}
{{- end }}
{{- if and (eq .Values.discovery.type "etcd") $passwordSecret (not (dig "user" "" $etcd)) (not $userInExtraEnv) }}
{{- fail (printf (print "discovery.etcd.passwordSecret.name: %q is not valid with discovery.etcd.user:"
  " \"\": Weir reads the password only with a user; expected a discovery.etcd.user (or"
  " WEIR_ETCD_USER in extraEnv) or no discovery.etcd.passwordSecret.name") $passwordSecret) }}
{{- end }}
{{- $etcdTls := dig "tls" dict $etcd }}
{{- $etcdTlsSecret := dig "secretName" "" $etcdTls }}
{{- $etcdCa := dig "ca" "" $etcdTls }}
{{- $etcdCert := dig "cert" "" $etcdTls }}
{{- $etcdKey := dig "key" "" $etcdTls }}
{{- if eq .Values.discovery.type "etcd" }}
{{- if and $etcdTlsSecret (not $etcdCa) (not $etcdCert) (not $etcdKey) }}
{{- fail (printf (print "discovery.etcd.tls.secretName: %q is not valid without discovery.etcd.tls.ca"
  " or discovery.etcd.tls.cert and key: expected the Secret's key that holds etcd's CA (e.g. ca.crt),"
  " the keys that hold the client certificate and its key (e.g. tls.crt, tls.key), or both")
  $etcdTlsSecret) }}
{{- end }}
{{- if not $etcdTlsSecret }}
{{- range $name, $key := dict "ca" $etcdCa "cert" $etcdCert "key" $etcdKey }}
{{- if $key }}
{{- fail (printf (print "discovery.etcd.tls.%s: %q is not valid with discovery.etcd.tls.secretName:"
  " \"\": expected the name of the Secret that holds it") $name $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and $etcdCert (not $etcdKey) }}
{{- fail (printf (print "discovery.etcd.tls.cert: %q is not valid with discovery.etcd.tls.key: \"\":"
  " expected both (the client certificate and its key) or neither") $etcdCert) }}
{{- end }}
{{- if and $etcdKey (not $etcdCert) }}
{{- fail (printf (print "discovery.etcd.tls.key: %q is not valid with discovery.etcd.tls.cert: \"\":"
  " expected both (the client certificate and its key) or neither") $etcdKey) }}
{{- end }}
{{- if $etcdTlsSecret }}
{{- range (dig "endpoints" list $etcd) }}
{{- if hasPrefix "http://" (lower .) }}
{{- fail (printf (print "discovery.etcd.tls.secretName: %q is not valid with the http:// endpoint %q:"
  " an http:// endpoint is plaintext; expected https:// or host:port endpoints") $etcdTlsSecret .) }}
{{- end }}
{{- end }}
{{- $etcdTlsSet := list }}
{{- if $etcdCa }}
{{- $etcdTlsSet = concat $etcdTlsSet (list "WEIR_ETCD_TLS_CA" "GUBER_ETCD_TLS_CA") }}
{{- end }}
{{- if $etcdCert }}
{{- $etcdTlsSet = concat $etcdTlsSet (list "WEIR_ETCD_TLS_CERT" "WEIR_ETCD_TLS_KEY"
  "GUBER_ETCD_TLS_CERT" "GUBER_ETCD_TLS_KEY") }}
{{- end }}
{{- range $.Values.extraEnv }}
{{- if has .name $etcdTlsSet }}
{{- $etcdTlsKey := printf "discovery.etcd.tls.%s" (lower (last (splitList "_" .name))) }}
{{- fail (printf (print "extraEnv: %s is not valid with discovery.etcd.tls.secretName: %q, which sets"
  " it from %s; expected that key or this variable, not both") .name $etcdTlsSecret
  $etcdTlsKey) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- if not (has .Values.discovery.watchMechanism (list "endpointslices" "pods")) }}
{{- fail (printf "discovery.watchMechanism: %q is not valid: expected endpointslices or pods"
  .Values.discovery.watchMechanism) }}
{{- end }}
{{- if not (has .Values.tls.clientAuth (list "none" "request" "require-and-verify")) }}
{{- fail (printf "tls.clientAuth: %q is not valid: expected none, request or require-and-verify"
  .Values.tls.clientAuth) }}
{{- end }}
{{- if and .Values.tls.enabled (not .Values.tls.useCa) }}
{{- fail (print "tls.useCa: false is not valid with tls.enabled: every Weir pod has peers (discovery is always"
  " on), and a node with peers refuses the JVM's trust store, which cannot verify the other pods' certificates;"
  " set tls.useCa: true with a Secret (or volume) that carries ca.crt") }}
{{- end }}
{{- if not (has .Values.config.source (list "file" "xds")) }}
{{- fail (printf "config.source: %q is not valid: expected file or xds" .Values.config.source) }}
{{- end }}
{{- if and (eq .Values.config.source "xds") (not .Values.config.xds.serverUrl) }}
{{- fail (print "config.xds.serverUrl: \"\" is not valid with config.source=xds:"
  " expected the xDS server's host:port") }}
{{- end }}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) (not .Values.tls.volume) }}
{{- fail (print "tls.secretName: \"\" is not valid with tls.enabled=true:"
  " expected the name of a kubernetes.io/tls Secret (or a tls.volume)") }}
{{- end }}
{{- if and .Values.tls.enabled (eq .Values.mode "ratelimit") }}
{{- fail (print "tls.enabled: true is not valid with mode=ratelimit: expected mode=weir"
  " (ratelimit mode takes GRPC_SERVER_TLS_* through extraEnv)") }}
{{- end }}
{{- if and .Values.tls.peerAllowedIdentities (not .Values.tls.enabled) }}
{{- fail (print "tls.peerAllowedIdentities is not valid with tls.enabled=false: peers are allowed by their"
  " certificates' names only under TLS (without it, by the peer secret); expected tls.enabled=true or no"
  " tls.peerAllowedIdentities") }}
{{- end }}
{{- if and .Values.tls.peerServerName (not .Values.tls.enabled) }}
{{- fail (print "tls.peerServerName is not valid with tls.enabled=false: it is the name peers' TLS"
  " certificates are verified against; expected tls.enabled=true or no tls.peerServerName") }}
{{- end }}
{{- if and .Values.tls.enabled .Values.istio.gatewayFilter.enabled }}
{{- fail (print "istio.gatewayFilter.enabled: true is not valid with tls.enabled=true: the filter calls the"
  " client port as plain gRPC, but with TLS it is tls-rls, which Istio passes through, so every rate-limit"
  " call would fail (and with failureModeDeny=false every request would pass unlimited); expected"
  " tls.enabled=false, or your own EnvoyFilter with a DestinationRule that originates TLS (tls.mode SIMPLE)") }}
{{- end }}
{{- $selector := include "weir.selectorLabels" . | fromYaml }}
{{- range $key, $value := .Values.podLabels }}
{{- $selected := get $selector $key }}
{{- if and (hasKey $selector $key) (ne (toString $value) $selected) }}
{{- fail (printf (print "podLabels.%s: %q is not valid: the Deployment's selector gives the pods %s=%s,"
  " which a pod label cannot change (the pods would match no selector); expected no podLabels.%s"
  " or the value %q") $key (toString $value) $key $selected $key $selected) }}
{{- end }}
{{- end }}
{{- if include "weir.mutualTls" . }}
{{- $http := include "weir.httpPort" . }}
{{- $grpc := include "weir.grpcPort" . }}
{{- if has (toString .Values.tls.statusPort) (list $http $grpc "1052") }}
{{- fail (printf (print "tls.statusPort: %v is not valid: the container listens there already;"
  " expected a port from 1 to 65535 other than %s (http), %s (grpc) and 1052 (peer)")
  .Values.tls.statusPort $http $grpc) }}
{{- end }}
{{- end }}
{{- if and (not .Values.autoscaling.enabled) (lt (int .Values.replicaCount) 1) }}
{{- fail (printf "replicaCount: %v is not valid: expected 1 or more" .Values.replicaCount) }}
{{- end }}
{{- end }}

{{/* The selector labels as a label selector string: k=v,k=v. */}}
{{- define "weir.selectorString" -}}
{{- $pairs := list }}
{{- range $k, $v := include "weir.selectorLabels" . | fromYaml }}
{{- $pairs = append $pairs (printf "%s=%s" $k $v) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{/* true when the chart makes the descriptor ConfigMap. */}}
{{- define "weir.createsConfigMap" -}}
{{- if and (eq .Values.config.source "file") (not .Values.config.existingConfigMap) }}true{{ end }}
{{- end }}

{{/*
Service port names and appProtocols by Istio's protocol selection: grpc and http in plaintext;
tls and https when Weir serves TLS itself, so a sidecar passes the bytes through unread.
*/}}
{{- define "weir.rlsPortName" -}}
{{- if .Values.tls.enabled }}tls-rls{{ else }}grpc-rls{{ end }}
{{- end }}
{{- define "weir.grpcProtocol" -}}
{{- if .Values.tls.enabled }}tls{{ else }}grpc{{ end }}
{{- end }}
{{- define "weir.httpPortName" -}}
{{- if .Values.tls.enabled }}https{{ else }}http{{ end }}
{{- end }}
{{- define "weir.peersPortName" -}}
{{- if .Values.tls.enabled }}tls-peers{{ else }}grpc-peers{{ end }}
{{- end }}

{{/* The source of the TLS volume: tls.volume, or the Secret tls.secretName. */}}
{{- define "weir.tlsVolumeSource" -}}
{{- if .Values.tls.volume }}
{{- toYaml .Values.tls.volume }}
{{- else }}
secret:
  secretName: {{ .Values.tls.secretName }}
{{- end }}
{{- end }}

{{/* "true" when the pods mount etcd's TLS files from discovery.etcd.tls.secretName. */}}
{{- define "weir.etcdTls" -}}
{{- if and (eq .Values.discovery.type "etcd") (dig "etcd" "tls" "secretName" "" .Values.discovery) }}true{{ end }}
{{- end }}
