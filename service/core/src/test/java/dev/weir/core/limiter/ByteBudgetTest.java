package dev.weir.core.limiter;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ByteBudgetTest {

  @Test
  void take_upToTheMost_thenNothingThatWouldPassIt_untilBytesAreGivenBack() {
    ByteBudget budget = new ByteBudget(100);

    assertThat(budget.take(60)).isTrue();
    assertThat(budget.take(41)).as("61 + 41 passes 100").isFalse();
    assertThat(budget.held()).as("a refused take takes nothing").isEqualTo(60);
    assertThat(budget.take(40)).as("exactly the most").isTrue();
    budget.give(60);
    assertThat(budget.held()).isEqualTo(40);
    assertThat(budget.take(60)).isTrue();
    assertThat(budget.most()).isEqualTo(100);
  }
}
