package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.logging.Level;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.logging.LoggingPreferences;
import org.openqa.selenium.support.ui.Select;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The status page ({@code GET /ui/}) of a two-node {@code weir.jar} cluster serving Envoy, in a
 * real headless Chromium driven by Selenium through Debian's {@code chromedriver}: the members and
 * their ring shares, a domain's rules, the explain form's answer (with and without a limit
 * override, and its error), the counts after hits and the top limited panel. Skipped, saying why,
 * where Chromium or chromedriver is not installed ({@code apt-get install chromium
 * chromium-driver}; {@code .ci/run} does); the paths can be changed with the {@code weir.chromium}
 * and {@code weir.chromedriver} system properties. The browser's console is read too: a test passes
 * only if the page logged no error there (a failed fetch included, unless the test expects it),
 * apart from the favicon the page does not have.
 */
class StatusPageJarIT {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 3, name: per-ip}
        - key: path
          value: /login
          rate_limit: {unit: second, requests_per_unit: 5}
      """;

  private static final Duration WAIT = Duration.ofSeconds(30);

  @TempDir Path dir;
  private final HttpClient http = HttpClient.newHttpClient();
  private final List<NodeProcess> nodes = new ArrayList<>();
  private final int[] grpc = new int[2];
  private final List<Map<String, String>> environments = new ArrayList<>();
  private final int[] httpPorts = new int[2];
  private final int[] peerPorts = new int[2];
  private WebDriver browser;

  @BeforeEach
  void start() throws Exception {
    Path chromium = Path.of(System.getProperty("weir.chromium", "/usr/bin/chromium"));
    Path driver = Path.of(System.getProperty("weir.chromedriver", "/usr/bin/chromedriver"));
    for (Path needed : List.of(chromium, driver)) {
      if (!Files.isExecutable(needed)) {
        String why =
            needed
                + " is not installed, so the status page is not tested in a browser"
                + " (apt-get install chromium chromium-driver)";
        System.out.println("StatusPageJarIT skipped: " + why);
        Assumptions.abort(why);
      }
    }
    Path config = Files.writeString(dir.resolve("shop.yaml"), YAML);
    for (int i = 0; i < 2; i++) {
      grpc[i] = NodeProcess.freePort();
      httpPorts[i] = NodeProcess.freePort();
      peerPorts[i] = NodeProcess.freePort();
    }
    String peers = NodeProcess.staticPeers(grpc, peerPorts);
    for (int i = 0; i < 2; i++) {
      environments.add(
          Map.of("WEIR_STATIC_PEERS", peers, "WEIR_ENVOY_CONFIG", config.toString()));
      nodes.add(
          NodeProcess.startMember(grpc[i], httpPorts[i], peerPorts[i], environments.get(i)));
    }
    for (NodeProcess node : nodes) {
      node.awaitHealthy(http);
    }
    ChromeOptions options = new ChromeOptions();
    options.setBinary(chromium.toFile());
    options.addArguments(
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--user-data-dir=" + Files.createDirectories(dir.resolve("chromium")));
    LoggingPreferences logs = new LoggingPreferences();
    logs.enable(LogType.BROWSER, Level.ALL);
    options.setCapability("goog:loggingPrefs", logs);
    ChromeDriverService service =
        new ChromeDriverService.Builder().usingDriverExecutable(driver.toFile()).build();
    browser = new ChromeDriver(service, options);
  }

  @AfterEach
  void stop() {
    if (browser != null) {
      browser.quit();
    }
    nodes.forEach(NodeProcess::close);
  }

  @Test
  void statusPage_showsTheClusterAndUpdatesAfterHits() throws Exception {
    NodeProcess node = nodes.get(0);
    WebDriverWait wait = openPage(node, WAIT);

    Set<String> expected = Set.of("127.0.0.1:" + grpc[0], "127.0.0.1:" + grpc[1]);
    wait.until(b -> addresses(b).equals(expected) && allReachableInRing(b));
    // Null (read again) while a refresh has the table half drawn.
    List<Double> shares =
        wait.until(
            b -> {
              List<Double> read =
                  b.findElements(By.cssSelector("#members tbody td.share")).stream()
                      .map(share -> Double.parseDouble(share.getDomAttribute("data-value")))
                      .toList();
              return read.size() == expected.size() ? read : null;
            });
    double total = 0;
    for (double value : shares) {
      assertThat(value).isGreaterThan(0.2);
      total += value;
    }
    assertThat(total).isCloseTo(1.0, within(1e-9));
    String shareTotal = wait.until(b -> b.findElement(By.id("share-total")).getText());
    assertThat(shareTotal).isEqualTo("100.00 %");

    String perIpLimit = wait.until(b -> cellText("shop", "remote_address", "limit"));
    String loginLimit = wait.until(b -> cellText("shop", "path_/login", "limit"));
    assertThat(perIpLimit).startsWith("3 per minute").contains("name \"per-ip\"");
    assertThat(loginLimit).startsWith("5 per second");

    new Select(browser.findElement(By.id("explain-domain"))).selectByValue("shop");
    browser.findElement(By.id("explain-descriptors")).sendKeys("remote_address=10.1.2.3");
    browser.findElement(By.id("explain-submit")).click();
    wait.until(b -> b.findElement(By.id("explain-answer")).getText().contains("policy 1"));
    assertThat(browser.findElement(By.id("explain-answer")).getText())
        .contains("descriptor 1: remote_address=10.1.2.3")
        .contains("matched: remote_address (any value)")
        .contains("policy 1: 3 per minute")
        .contains("now: 3 of 3 remaining, UNDER_LIMIT");

    for (int i = 0; i < 4; i++) {
      shouldRateLimit(node, "remote_address", "10.1.2.3");
    }
    wait.until(b -> cellText("shop", "remote_address", "hits").equals("4"));
    String over = wait.until(b -> cellText("shop", "remote_address", "over"));
    assertThat(over).isEqualTo("1");
    wait.until(b -> rate(cellText("shop", "remote_address", "hits-rate")) > 0);

    // Nodes run with the default WEIR_TOP_LIMITED=true, so the route is there and the panel shows it.
    HttpResponse<String> top = get(node, "/v1/TopLimited");
    assertThat(top.statusCode()).as(top.body()).isEqualTo(200);
    wait.until(
        b ->
            b.findElements(By.cssSelector("#top-limited td.top-key")).stream()
                .anyMatch(key -> key.getText().equals("remote_address=10.1.2.3")));
    assertThat(browser.findElement(By.id("top-limited")).isDisplayed()).isTrue();
    wait.until(
        b ->
            b.findElement(By.id("top-limited-state"))
                .getText()
                .startsWith("the last 300 s (node): 1 over-limit answers in all"));
    assertThat(browser.getPageSource())
        .doesNotContain(NodeProcess.PEER_SECRET)
        .contains("Descriptor config");
    assertNoConsoleErrors();
  }

  @Test
  void explainForm_limitOverride_explainedAsTheRouteDoesAndBadInputShowsTheRoutesError()
      throws Exception {
    NodeProcess node = nodes.get(0);
    WebDriverWait wait = openPage(node, WAIT);
    awaitExplainForm(wait);
    new Select(browser.findElement(By.id("explain-domain"))).selectByValue("shop");
    browser.findElement(By.id("explain-descriptors")).sendKeys("remote_address=10.1.2.3");
    WebElement requests = browser.findElement(By.id("explain-limit-requests"));
    requests.sendKeys("1000");
    new Select(browser.findElement(By.id("explain-limit-unit"))).selectByValue("HOUR");

    browser.findElement(By.id("explain-submit")).click();

    wait.until(b -> b.findElement(By.id("explain-answer")).getText().contains("policy 1"));
    assertThat(browser.findElement(By.id("explain-answer")).getText())
        .contains("descriptor 1: remote_address=10.1.2.3")
        .contains(
            "limit override: 1000 per hour, from the descriptor's limit; rules are not matched")
        .contains("policy 1: 1000 per hour, fixed_window, limit override")
        .contains("now: 1000 of 1000 remaining, UNDER_LIMIT")
        .doesNotContain("matched:");

    requests.clear();
    requests.sendKeys("-1");
    browser.findElement(By.id("explain-submit")).click();

    String error = awaitExplainError(wait);
    assertThat(error)
        .isEqualTo(
            "HTTP 400: invalid request body: field 'descriptors[0].limit.requests_per_unit' is -1;"
                + " it must be a uint32: a whole number from 0 to 4294967295, or one written as a"
                + " string");

    requests.clear();
    browser.findElement(By.id("explain-submit")).click();

    wait.until(b -> b.findElement(By.id("explain-answer")).getText().contains("policy 1"));
    assertThat(browser.findElement(By.id("explain-answer")).getText())
        .contains("matched: remote_address (any value)")
        .contains("policy 1: 3 per minute")
        .doesNotContain("limit override");
    assertOnlyConsoleErrors(
        "/v1/Explain - Failed to load resource: the server responded with a status of 400");
  }

  @Test
  void topLimitedClusterWide_aMemberDown_namesTheMemberThatDidNotAnswer() throws Exception {
    NodeProcess node = nodes.get(0);
    WebDriverWait wait = openPage(node, WAIT);
    Set<String> expected = Set.of("127.0.0.1:" + grpc[0], "127.0.0.1:" + grpc[1]);
    wait.until(b -> addresses(b).equals(expected) && allReachableInRing(b));
    for (int i = 0; i < 4; i++) {
      shouldRateLimit(node, "remote_address", "10.1.2.3");
    }
    String down = "127.0.0.1:" + grpc[1];

    nodes.get(1).close();
    browser.findElement(By.id("top-scope-cluster")).click();

    // The sums are this node's alone: the panel says so, naming the member that did not answer.
    String state =
        wait.withMessage(() -> "#top-limited-state never named " + down)
            .until(
                b -> {
                  String text = b.findElement(By.id("top-limited-state")).getText();
                  return text.contains(down) ? text : null;
                });
    assertThat(state)
        .startsWith("the last 300 s (cluster): 1 over-limit answers in all")
        .contains("partial: 1 member is not counted: " + down + " (");
    wait.until(
        b ->
            b.findElements(By.cssSelector("#top-limited td.top-key")).stream()
                .anyMatch(key -> key.getText().equals("remote_address=10.1.2.3")));
    assertNoConsoleErrors();
  }

  @Test
  void topLimited_errorAnswerAfterRows_panelHidesThemAndShowsTheError() throws Exception {
    NodeProcess node = nodes.get(0);
    WebDriverWait wait = openPage(node, WAIT);
    for (int i = 0; i < 4; i++) {
      shouldRateLimit(node, "remote_address", "10.1.2.3");
    }
    wait.until(
        b ->
            b.findElements(By.cssSelector("#top-limited td.top-key")).stream()
                .anyMatch(key -> key.getText().equals("remote_address=10.1.2.3")));

    // The node answers the page's own query 200 whatever it holds, so the error answer is made
    // in the page: from now on its GET /v1/TopLimited is answered 503 (the rest goes through).
    ((JavascriptExecutor) browser)
        .executeScript(
            "const real = window.fetch;"
                + "window.fetch = (url, init) => String(url).includes('/v1/TopLimited')"
                + "  ? Promise.resolve(new Response('{\"code\":14}', {status: 503}))"
                + "  : real(url, init);");

    wait.withMessage(() -> "#top-limited-state never told of the 503")
        .until(
            b ->
                b.findElement(By.id("top-limited-state"))
                    .getText()
                    .equals("GET /v1/TopLimited answered 503"));
    assertThat(browser.findElement(By.id("top-limited-state")).getDomAttribute("class"))
        .contains("error");
    assertThat(browser.findElement(By.id("top-limited")).isDisplayed())
        .as("the rows of an earlier answer are not shown under the error")
        .isFalse();
    assertNoConsoleErrors();
  }

  @Test
  void nodePausedThenResumed_pageSaysItCannotReachTheNodeThenRefreshesAgain() throws Exception {
    NodeProcess node = nodes.get(0);
    WebDriverWait wait = openPage(node, Duration.ofSeconds(60));
    wait.until(b -> Integer.parseInt(b.findElement(By.id("refreshes")).getText()) > 0);

    // A paused process keeps its sockets: the page's request is taken and never answered.
    node.signal("STOP");
    String error;
    try {
      error =
          wait.withMessage(() -> "#fetch-error never said the node does not answer")
              .until(
                  b -> {
                    String text = b.findElement(By.id("fetch-error")).getText();
                    return text.isEmpty() ? null : text;
                  });
    } finally {
      node.signal("CONT");
    }
    assertThat(error).isEqualTo("cannot reach the node: no answer within 10 s");

    int before = Integer.parseInt(browser.findElement(By.id("refreshes")).getText());
    wait.withMessage(() -> "the page never refreshed again after the node resumed")
        .until(
            b ->
                b.findElement(By.id("fetch-error")).getText().isEmpty()
                    && Integer.parseInt(b.findElement(By.id("refreshes")).getText()) > before);
  }

  @Test
  void explainAnsweredByAProxysErrorPage_showsTheStatusAndText() throws Exception {
    NodeProcess node = nodes.get(0);
    WebDriverWait wait = openPage(node, WAIT);
    awaitExplainForm(wait);
    // A reverse proxy in front of the node answers 502 with a page of its own.
    ((JavascriptExecutor) browser)
        .executeScript(
            "const real = window.fetch;"
                + "window.fetch = (url, init) => String(url).includes('/v1/Explain')"
                + "  ? Promise.resolve(new Response('<html><body>502 Bad Gateway</body></html>',"
                + "      {status: 502, headers: {'Content-Type': 'text/html'}}))"
                + "  : real(url, init);");
    browser.findElement(By.id("explain-descriptors")).sendKeys("remote_address=10.1.2.3");

    browser.findElement(By.id("explain-submit")).click();

    String error = awaitExplainError(wait);
    assertThat(error)
        .isEqualTo(
            "HTTP 502: not an answer of Weir: <html><body>502 Bad Gateway</body></html>");
    assertNoConsoleErrors();
  }

  @Test
  void explainAskedTwiceFirstAnsweredLate_theLaterAnswerStays() throws Exception {
    NodeProcess node = nodes.get(0);
    WebDriverWait wait = openPage(node, WAIT);
    awaitExplainForm(wait);
    // The first POST /v1/Explain goes to a stalled node: it fails only when the test says so.
    ((JavascriptExecutor) browser)
        .executeScript(
            "const real = window.fetch; let stalled = true;"
                + "window.fetch = (url, init) => {"
                + "  if (!String(url).includes('/v1/Explain') || !stalled) {"
                + "    return real(url, init);"
                + "  }"
                + "  stalled = false;"
                + "  return new Promise((resolve, reject) => {"
                + "    window.failStalled = () => reject(new TypeError('Failed to fetch'));"
                + "  });"
                + "};");
    browser.findElement(By.id("explain-descriptors")).sendKeys("remote_address=10.1.2.3");
    browser.findElement(By.id("explain-submit")).click();
    browser.findElement(By.id("explain-submit")).click();
    String answered =
        wait.until(
            b -> {
              String text = b.findElement(By.id("explain-answer")).getText();
              return text.isEmpty() || text.equals("asking…") ? null : text;
            });

    ((JavascriptExecutor) browser)
        .executeAsyncScript(
            "const done = arguments[arguments.length - 1];"
                + "window.failStalled(); setTimeout(done, 0);");

    assertThat(browser.findElement(By.id("explain-answer")).getText()).isEqualTo(answered);
    assertThat(answered).doesNotStartWith("could not ask the node");
    assertNoConsoleErrors();
  }

  @Test
  void statusAndTopLimitedAnsweredByALoginPage_sayTheAnswerIsNotJson() throws Exception {
    NodeProcess node = nodes.get(0);
    WebDriverWait wait = openPage(node, WAIT);
    wait.until(b -> Integer.parseInt(b.findElement(By.id("refreshes")).getText()) > 0);
    // An authenticating proxy in front of the node answers 200 with its login page.
    ((JavascriptExecutor) browser)
        .executeScript(
            "const real = window.fetch;"
                + "window.fetch = (url, init) => /\\/v1\\/(Status|TopLimited)/.test(String(url))"
                + "  ? Promise.resolve(new Response('<html><body>Sign in</body></html>',"
                + "      {status: 200, headers: {'Content-Type': 'text/html'}}))"
                + "  : real(url, init);");

    wait.withMessage(() -> "#fetch-error and #top-limited-state never said it is not JSON")
        .until(
            b ->
                b.findElement(By.id("fetch-error"))
                        .getText()
                        .equals(
                            "GET /v1/Status answered 200, not JSON: "
                                + "<html><body>Sign in</body></html>")
                    && b.findElement(By.id("top-limited-state"))
                        .getText()
                        .equals(
                            "GET /v1/TopLimited answered 200, not JSON: "
                                + "<html><body>Sign in</body></html>"));
    assertNoConsoleErrors();
  }

  @Test
  void memberKilledThenBack_membersPanelShowsItDownOffTheRingThenBack() throws Exception {
    WebDriverWait wait = openPage(nodes.get(0), Duration.ofSeconds(60));
    String other = "127.0.0.1:" + grpc[1];
    Set<String> expected = Set.of("127.0.0.1:" + grpc[0], other);
    wait.until(b -> addresses(b).equals(expected) && allReachableInRing(b));

    nodes.get(1).kill();

    wait.withMessage(() -> other + " never shown down and off the ring with a 0.00 % share")
        .until(
            b ->
                memberCell(b, other, "reachable").matches("no, down [0-9]+ s")
                    && memberCell(b, other, "in-ring").equals("no")
                    && !memberCell(b, other, "member-error").isEmpty()
                    && memberCell(b, other, "share").equals("0.00 %")
                    && memberCell(b, "127.0.0.1:" + grpc[0], "share").equals("100.00 %"));
    String totalWhileDown = wait.until(b -> b.findElement(By.id("share-total")).getText());
    assertThat(totalWhileDown).isEqualTo("100.00 %");

    nodes.set(
        1,
        NodeProcess.startMember(grpc[1], httpPorts[1], peerPorts[1], environments.get(1)));

    wait.withMessage(() -> other + " never shown back on the ring without an error")
        .until(
            b ->
                addresses(b).equals(expected)
                    && allReachableInRing(b)
                    && memberCell(b, other, "member-error").isEmpty());
    String totalWhenBack = wait.until(b -> b.findElement(By.id("share-total")).getText());
    assertThat(totalWhenBack).isEqualTo("100.00 %");
    assertNoConsoleErrors();
  }

  /**
   * Asserts that the page logged no error in the browser's console (a fetch answered 404 or 500, a
   * script error, a refused Content-Security-Policy), apart from the favicon the page lacks.
   */
  /**
   * Opens the status page of {@code node} and returns a wait that looks elements up again on every
   * try: the page re-renders its tables on every refresh, so an element found a moment ago may be
   * gone.
   */
  private WebDriverWait openPage(NodeProcess node, Duration timeout) {
    browser.get("http://127.0.0.1:" + node.httpPort + "/ui/");
    WebDriverWait wait = new WebDriverWait(browser, timeout);
    wait.ignoring(StaleElementReferenceException.class);
    return wait;
  }

  /** Waits until the explain form offers the {@code shop} domain of the nodes' config. */
  private static void awaitExplainForm(WebDriverWait wait) {
    wait.until(
        b -> !b.findElements(By.cssSelector("#explain-domain option[value='shop']")).isEmpty());
  }

  /** Waits until the explain form shows an error and returns its text. */
  private static String awaitExplainError(WebDriverWait wait) {
    return wait.until(
        b -> {
          WebElement answer = b.findElement(By.id("explain-answer"));
          return "error".equals(answer.getDomAttribute("class")) ? answer.getText() : null;
        });
  }

  private void assertNoConsoleErrors() {
    assertThat(consoleErrors()).as("errors in the browser's console").isEmpty();
  }

  /**
   * Asserts that the only errors the page logged in the browser's console, apart from the favicon,
   * were each one containing {@code expected}, and that there was at least one.
   */
  private void assertOnlyConsoleErrors(String expected) {
    assertThat(consoleErrors())
        .as("errors in the browser's console")
        .isNotEmpty()
        .allMatch(message -> message.contains(expected));
  }

  private List<String> consoleErrors() {
    return browser.manage().logs().get(LogType.BROWSER).getAll().stream()
        .filter(entry -> entry.getLevel().intValue() >= Level.SEVERE.intValue())
        .map(LogEntry::getMessage)
        .filter(message -> !message.contains("/favicon.ico"))
        .toList();
  }

  private static double rate(String text) {
    return text.matches("[0-9]+\\.[0-9]") ? Double.parseDouble(text) : 0;
  }

  private static Set<String> addresses(WebDriver b) {
    return b.findElements(By.cssSelector("#members tbody tr")).stream()
        .map(row -> row.getDomAttribute("data-address"))
        .collect(Collectors.toSet());
  }

  /** Returns the text of the cell of class {@code cell} in the members row of {@code address}. */
  private static String memberCell(WebDriver b, String address, String cell) {
    return b.findElement(
            By.cssSelector("#members tr[data-address='" + address + "'] td." + cell))
        .getText();
  }

  private static boolean allReachableInRing(WebDriver b) {
    return b.findElements(By.cssSelector("#members tbody tr")).stream()
        .allMatch(
            row ->
                row.findElement(By.cssSelector("td.reachable")).getText().equals("yes")
                    && row.findElement(By.cssSelector("td.in-ring")).getText().equals("yes"));
  }

  private WebElement rule(String domain, String rule) {
    return browser.findElement(
        By.cssSelector("div.domain[data-domain='" + domain + "'] tr[data-rule='" + rule + "']"));
  }

  private String cellText(String domain, String rule, String cell) {
    return rule(domain, rule).findElement(By.cssSelector("td." + cell)).getText();
  }

  private void shouldRateLimit(NodeProcess node, String key, String value) throws Exception {
    String body =
        "{\"domain\":\"shop\",\"descriptors\":[{\"entries\":[{\"key\":\""
            + key
            + "\",\"value\":\""
            + value
            + "\"}]}]}";
    HttpResponse<String> answer =
        http.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort + "/json"))
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(answer.statusCode()).as(answer.body()).isIn(200, 429);
  }

  private HttpResponse<String> get(NodeProcess node, String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.httpPort + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
