/**
 * Who may call the peer protocol: a shared peer secret or mutual TLS, checked on every call ({@link
 * dev.weir.core.cluster.peer.auth.PeerSecurity}).
 */
package dev.weir.core.cluster.peer.auth;
