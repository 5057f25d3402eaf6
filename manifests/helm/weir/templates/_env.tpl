{{/*
The container's variables the chart sets, as a YAML list; the Deployment leaves out those that
extraEnv names, which come after them.
*/}}
{{- define "weir.env" -}}
{{- $grpcPort := include "weir.grpcPort" . }}
  {{- if eq .Values.mode "ratelimit" }}
  {{- if eq .Values.config.source "xds" }}
  - name: CONFIG_TYPE
    value: GRPC_XDS_SOTW
  - name: CONFIG_GRPC_XDS_SERVER_URL
    value: {{ .Values.config.xds.serverUrl | quote }}
  - name: CONFIG_GRPC_XDS_NODE_ID
    value: {{ .Values.config.xds.nodeId | quote }}
  {{- else }}
  - name: RUNTIME_ROOT
    value: /etc/weir
  - name: RUNTIME_APPDIRECTORY
    value: config
  {{- end }}
  - name: USE_STATSD
    value: "false"
  {{- else }}
  - name: WEIR_GRPC_ADDRESS
    value: "0.0.0.0:{{ $grpcPort }}"
  - name: WEIR_HTTP_ADDRESS
    value: "0.0.0.0:{{ include "weir.httpPort" . }}"
  {{- end }}
  - name: WEIR_PEER_ADDRESS
    value: "0.0.0.0:1052"
  - name: WEIR_PEER_SECRET_FILE
    value: /etc/weir/peer/secret
  - name: WEIR_PEER_DISCOVERY_TYPE
    value: {{ .Values.discovery.type }}
  {{- if eq .Values.discovery.type "k8s" }}
  - name: WEIR_K8S_NAMESPACE
    valueFrom:
      fieldRef:
        fieldPath: metadata.namespace
  {{- end }}
  # The node advertises the pod IP in place of its wildcard gRPC host, in every discovery
  # mode ([fd00::5]:1051 for IPv6): no WEIR_ADVERTISE_ADDRESS.
  - name: WEIR_K8S_POD_IP
    valueFrom:
      fieldRef:
        fieldPath: status.podIP
  {{- if eq .Values.discovery.type "k8s" }}
  - name: WEIR_K8S_POD_PORT
    value: {{ $grpcPort | quote }}
  - name: WEIR_K8S_SERVICE_NAME
    value: {{ include "weir.peersServiceName" . }}
  {{- if eq .Values.discovery.watchMechanism "pods" }}
  - name: WEIR_K8S_WATCH_MECHANISM
    value: pods
  - name: WEIR_K8S_SELECTOR
    value: {{ include "weir.selectorString" . | quote }}
  {{- end }}
  {{- else if eq .Values.discovery.type "dns" }}
  - name: WEIR_DNS_FQDN
    value: {{ printf "%s.%s.svc.%s" (include "weir.peersDnsServiceName" .)
      .Release.Namespace .Values.clusterDomain }}
  {{- else }}
  {{- with .Values.discovery.etcd }}
  - name: WEIR_ETCD_ENDPOINTS
    value: {{ join "," .endpoints | quote }}
  - name: WEIR_ETCD_KEY_PREFIX
    value: {{ .keyPrefix | default (printf "/weir/%s/%s/" $.Release.Namespace
      (include "weir.fullname" $)) | quote }}
  {{- with .dialTimeout }}
  - name: WEIR_ETCD_DIAL_TIMEOUT
    value: {{ . | quote }}
  {{- end }}
  {{- with .leaseTtl }}
  - name: WEIR_ETCD_LEASE_TTL
    value: {{ . | quote }}
  {{- end }}
  {{- with .dataCenter }}
  - name: WEIR_ETCD_DATA_CENTER
    value: {{ . | quote }}
  {{- end }}
  {{- with .user }}
  - name: WEIR_ETCD_USER
    value: {{ . | quote }}
  {{- end }}
  {{- with .passwordSecret }}
  {{- if .name }}
  - name: WEIR_ETCD_PASSWORD
    valueFrom:
      secretKeyRef:
        name: {{ .name | quote }}
        key: {{ .key | quote }}
  {{- end }}
  {{- end }}
  {{- if include "weir.etcdTls" $ }}
  {{- with .tls }}
  {{- if .ca }}
  - name: WEIR_ETCD_TLS_CA
    value: /etc/weir/etcd-tls/ca.crt
  {{- end }}
  {{- if .cert }}
  - name: WEIR_ETCD_TLS_CERT
    value: /etc/weir/etcd-tls/tls.crt
  - name: WEIR_ETCD_TLS_KEY
    value: /etc/weir/etcd-tls/tls.key
  {{- end }}
  {{- end }}
  {{- end }}
  {{- end }}
  {{- end }}
  {{- if eq .Values.mode "weir" }}
  {{- if eq .Values.config.source "xds" }}
  - name: WEIR_ENVOY_CONFIG_SOURCE
    value: xds
  - name: WEIR_ENVOY_XDS_SERVER_URL
    value: {{ .Values.config.xds.serverUrl | quote }}
  - name: WEIR_ENVOY_XDS_NODE_ID
    value: {{ .Values.config.xds.nodeId | quote }}
  {{- else }}
  - name: WEIR_ENVOY_CONFIG
    value: /etc/weir/config
  {{- end }}
  {{- end }}
  {{- if .Values.tls.enabled }}
  - name: WEIR_TLS_CERT
    value: /etc/weir/tls/tls.crt
  - name: WEIR_TLS_KEY
    value: /etc/weir/tls/tls.key
  {{- if .Values.tls.useCa }}
  - name: WEIR_TLS_CA
    value: /etc/weir/tls/ca.crt
  {{- end }}
  - name: WEIR_TLS_CLIENT_AUTH
    value: {{ .Values.tls.clientAuth }}
  {{- with .Values.tls.peerAllowedIdentities }}
  - name: WEIR_PEER_ALLOWED_IDENTITIES
    value: {{ join "," . | quote }}
  {{- end }}
  {{- with .Values.tls.peerServerName }}
  - name: WEIR_PEER_TLS_SERVER_NAME
    value: {{ . | quote }}
  {{- end }}
  {{- if include "weir.mutualTls" . }}
  - name: WEIR_STATUS_HTTP_ADDRESS
    value: "0.0.0.0:{{ .Values.tls.statusPort }}"
  {{- end }}
  {{- end }}
  {{- with .Values.forwardStandInAfter }}
  - name: WEIR_FORWARD_STAND_IN_AFTER
    value: {{ . | quote }}
  {{- end }}
  {{- with .Values.gracefulTerminationDelay }}
  - name: WEIR_GRACEFUL_TERMINATION_DELAY
    value: {{ . | quote }}
  {{- end }}
{{- end }}
