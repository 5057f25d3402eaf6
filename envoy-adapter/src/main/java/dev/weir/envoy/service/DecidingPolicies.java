package dev.weir.envoy.service;

import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The policy that decides each descriptor of a call, with its answer: of a {@link
 * DescriptorPlan.Limited} plan's policies, the first one over the limit, else the first that failed,
 * else the one with the least remaining (the first of equals).
 */
final class DecidingPolicies {

  private static final int NONE = -1;

  private final List<DescriptorPlan> plans;
  private final List<RateLimitResponse> answers;

  /** Per plan, the index in {@link #answers} of its deciding policy's answer, or {@link #NONE}. */
  private final int[] answer;

  /** Per plan, the index among its own policies of its deciding policy, or {@link #NONE}. */
  private final int[] policy;

  private DecidingPolicies(
      List<DescriptorPlan> plans, List<RateLimitResponse> answers, int[] answer, int[] policy) {
    this.plans = plans;
    this.answers = answers;
    this.answer = answer;
    this.policy = policy;
  }

  /**
   * Returns the deciding policies of {@code plans}, where {@code answers} holds the core's answers
   * to the policies of the {@link DescriptorPlan.Limited} plans in order.
   */
  static DecidingPolicies of(List<DescriptorPlan> plans, List<RateLimitResponse> answers) {
    int[] answer = new int[plans.size()];
    int[] policy = new int[plans.size()];
    Arrays.fill(answer, NONE);
    Arrays.fill(policy, NONE);
    int next = 0;
    for (int d = 0; d < plans.size(); d++) {
      if (plans.get(d) instanceof DescriptorPlan.Limited limited) {
        int policies = limited.policies().size();
        policy[d] = deciding(answers, next, policies);
        answer[d] = next + policy[d];
        next += policies;
      }
    }
    return new DecidingPolicies(plans, answers, answer, policy);
  }

  /** Returns the deciding policy of plan {@code d}, a {@link DescriptorPlan.Limited} plan. */
  DescriptorPlan.Policy policy(int d) {
    return ((DescriptorPlan.Limited) plans.get(d)).policies().get(policy[d]);
  }

  /** Returns the core's answer to the deciding policy of plan {@code d}, a limited plan. */
  RateLimitResponse answer(int d) {
    return answers.get(answer[d]);
  }

  /** Returns the deciding answer of each {@link DescriptorPlan.Limited} plan in order. */
  List<RateLimitResponse> answers() {
    List<RateLimitResponse> out = new ArrayList<>(plans.size());
    for (int index : answer) {
      if (index != NONE) {
        out.add(answers.get(index));
      }
    }
    return out;
  }

  private static int deciding(List<RateLimitResponse> answers, int from, int count) {
    int best = 0;
    int failed = -1;
    for (int i = 0; i < count; i++) {
      RateLimitResponse a = answers.get(from + i);
      if (a.isError()) {
        failed = failed < 0 ? i : failed;
      } else if (a.status() == Status.OVER_LIMIT) {
        return i;
      } else if (a.remaining() < answers.get(from + best).remaining()) {
        best = i;
      }
    }
    return failed >= 0 ? failed : best;
  }
}
