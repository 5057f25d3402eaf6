package dev.weir.envoy.config;

import java.util.Objects;

/**
 * The compiled rules of one domain.
 *
 * @param domain the domain name requests carry
 * @param root the top-level rules
 */
public record DomainConfig(String domain, DescriptorLevel root) {

  /** Creates a domain config. */
  public DomainConfig {
    Objects.requireNonNull(domain, "domain");
    Objects.requireNonNull(root, "root");
  }
}
