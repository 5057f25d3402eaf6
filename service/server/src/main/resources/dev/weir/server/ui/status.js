// The status page's script: polls GET /v1/Status (and GET /v1/TopLimited when the node has it)
// every 2 seconds and renders them; the form asks POST /v1/Explain. Text goes into the page with
// textContent only, never as HTML.
'use strict';

(function () {
  const REFRESH_MS = 2000;
  const ANSWER_MS = 10000;
  const STATUS_URL = '../v1/Status';
  const TOP_URL = '../v1/TopLimited';
  const EXPLAIN_URL = '../v1/Explain';

  let previous = null;
  let refreshes = 0;
  let topAvailable = true;
  let explainSeq = 0;

  // Asks url and reads the whole answer as text, giving up after ANSWER_MS: a node that stopped
  // answering (a paused process, a lost network path) would otherwise hold the request, and with
  // it every later refresh, without a word.
  async function ask(url, init) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), ANSWER_MS);
    try {
      const answer = await fetch(url, Object.assign({}, init, { signal: abort.signal }));
      return { status: answer.status, ok: answer.ok, text: await answer.text() };
    } catch (e) {
      throw abort.signal.aborted ? new Error('no answer within ' + ANSWER_MS / 1000 + ' s') : e;
    } finally {
      clearTimeout(timer);
    }
  }

  // The JSON of an answer's text, or null when it is not JSON (a reverse proxy's error page).
  function jsonOf(text) {
    try {
      return JSON.parse(text);
    } catch (e) {
      return null;
    }
  }

  // The message for an answer of url whose text is not JSON: its status and first 200 characters.
  function notJson(url, answer) {
    return 'GET ' + url + ' answered ' + answer.status + ', not JSON: ' +
      answer.text.trim().slice(0, 200);
  }

  function $(id) {
    return document.getElementById(id);
  }

  function cell(row, text, className) {
    const td = document.createElement('td');
    td.textContent = text;
    if (className) {
      td.className = className;
    }
    row.appendChild(td);
    return td;
  }

  function percent(fraction) {
    return (fraction * 100).toFixed(2) + ' %';
  }

  function rate(now, before, seconds) {
    if (before === undefined || seconds <= 0) {
      return '–';
    }
    return (Math.max(0, now - before) / seconds).toFixed(1);
  }

  function renderMembers(status) {
    const body = $('members').tBodies[0];
    body.replaceChildren();
    let total = 0;
    for (const m of status.members) {
      const row = document.createElement('tr');
      row.dataset.address = m.address;
      if (!m.reachable) {
        row.className = 'down';
      }
      cell(row, m.address + (m.self ? ' (this node)' : ''), 'address');
      cell(row, m.reachable ? 'yes' : 'no, down ' + Math.round(m.down_for_ms / 1000) + ' s',
        'reachable');
      cell(row, m.in_ring ? 'yes' : 'no', 'in-ring');
      const share = cell(row, percent(m.ring_share), 'share num');
      share.dataset.value = String(m.ring_share);
      cell(row, m.error, 'member-error');
      body.appendChild(row);
      total += m.ring_share;
    }
    $('share-total').textContent = percent(total);
    $('share-total').className = 'num';
    const components = $('components').tBodies[0];
    components.replaceChildren();
    for (const c of status.components) {
      const row = document.createElement('tr');
      cell(row, c.name);
      cell(row, c.healthy ? 'yes' : 'no');
      cell(row, c.gates_readiness ? 'yes' : 'no');
      cell(row, c.message);
      components.appendChild(row);
    }
  }

  function renderDomains(status, counts, seconds) {
    $('envoy-off').hidden = status.envoy.enabled;
    const holder = $('domains');
    holder.replaceChildren();
    for (const d of status.envoy.domains) {
      const section = document.createElement('div');
      section.className = 'domain';
      section.dataset.domain = d.domain;
      const title = document.createElement('h3');
      const key = d.domain + '\u0000';
      title.textContent = 'domain ' + d.domain + ': ' + d.total_hits + ' hits, ' +
        d.over_limit + ' over limit; ' + rate(d.total_hits, counts[key + 'hits'], seconds) +
        ' hits/s, ' + rate(d.over_limit, counts[key + 'over'], seconds) + ' over limit/s';
      section.appendChild(title);
      const table = document.createElement('table');
      table.className = 'rules';
      const head = table.createTHead().insertRow();
      for (const name of ['Rule', 'Limit', 'Source', 'Hits', 'Over limit', 'Hits/s',
        'Over limit/s']) {
        const th = document.createElement('th');
        th.textContent = name;
        if (name.startsWith('Hits') || name.startsWith('Over')) {
          th.className = 'num';
        }
        head.appendChild(th);
      }
      const body = table.createTBody();
      for (const r of d.rules) {
        const row = body.insertRow();
        row.dataset.rule = r.rule;
        cell(row, r.rule + (r.shadow_mode ? ' (shadow mode)' : ''), 'rule');
        cell(row, r.limit, 'limit');
        cell(row, r.source, 'source');
        if (r.counted_per_value) {
          cell(row, 'counted per value (in the domain total)', 'hits');
          cell(row, '', 'over');
          cell(row, '', 'hits-rate');
          cell(row, '', 'over-rate');
          continue;
        }
        const ruleKey = key + r.rule + '\u0000';
        cell(row, String(r.total_hits), 'hits num');
        cell(row, String(r.over_limit), 'over num');
        cell(row, rate(r.total_hits, counts[ruleKey + 'hits'], seconds), 'hits-rate num');
        cell(row, rate(r.over_limit, counts[ruleKey + 'over'], seconds), 'over-rate num');
      }
      section.appendChild(table);
      holder.appendChild(section);
    }
  }

  function countsOf(status) {
    const counts = {};
    for (const d of status.envoy.domains) {
      const key = d.domain + '\u0000';
      counts[key + 'hits'] = d.total_hits;
      counts[key + 'over'] = d.over_limit;
      for (const r of d.rules) {
        if (!r.counted_per_value) {
          counts[key + r.rule + '\u0000hits'] = r.total_hits;
          counts[key + r.rule + '\u0000over'] = r.over_limit;
        }
      }
    }
    return counts;
  }

  function renderDomainChoice(status) {
    const select = $('explain-domain');
    const domains = status.envoy.domains.map((d) => d.domain);
    const current = Array.from(select.options).map((o) => o.value);
    if (domains.join('\u0000') !== current.join('\u0000')) {
      const chosen = select.value;
      select.replaceChildren();
      for (const d of domains) {
        const option = document.createElement('option');
        option.value = d;
        option.textContent = d;
        select.appendChild(option);
      }
      if (domains.includes(chosen)) {
        select.value = chosen;
      }
    }
    $('explain-submit').disabled = !status.envoy.enabled;
  }

  function render(status) {
    const now = performance.now();
    const counts = previous ? previous.counts : {};
    const seconds = previous ? (now - previous.at) / 1000 : 0;
    $('self').textContent = status.self;
    const readiness = $('readiness');
    readiness.textContent = (status.ready ? 'ready' : 'not ready') + ', ' +
      (status.healthy ? 'healthy' : 'unhealthy');
    readiness.className = 'badge ' + (status.ready && status.healthy ? 'ok' : 'bad');
    $('health-message').textContent = status.message;
    renderMembers(status);
    renderDomains(status, counts, seconds);
    renderDomainChoice(status);
    previous = { at: now, counts: countsOf(status) };
  }

  function keyText(key) {
    if (typeof key === 'string') {
      return key;
    }
    if (Array.isArray(key)) {
      return key.map((e) => (e && e.key !== undefined ? e.key + '=' + e.value : JSON.stringify(e)))
        .join(', ');
    }
    return JSON.stringify(key);
  }

  // What a cluster-wide answer lacks: the members whose keys are not counted, each with why (it did
  // not answer, or it does not count its keys).
  function partial(unreachable) {
    if (unreachable.length === 0) {
      return '';
    }
    return '; partial: ' + unreachable.length +
      (unreachable.length === 1
        ? ' member is not counted: '
        : ' members are not counted: ') +
      unreachable.map((u) => u.peer + ' (' + u.error + ')').join(', ');
  }

  async function refreshTop() {
    if (!topAvailable) {
      return;
    }
    const state = $('top-limited-state');
    const table = $('top-limited');
    const scope = $('top-scope-cluster').checked ? '&scope=cluster' : '';
    try {
      const answer = await ask(TOP_URL + '?limit=20' + scope, { cache: 'no-store' });
      if (answer.status === 404) {
        topAvailable = false;
        state.textContent = 'not available on this node (GET /v1/TopLimited answered 404)';
        table.hidden = true;
        return;
      }
      if (!answer.ok) {
        topFailed(state, table, 'GET /v1/TopLimited answered ' + answer.status);
        return;
      }
      const top = jsonOf(answer.text);
      if (top === null) {
        topFailed(state, table, notJson('/v1/TopLimited', answer));
        return;
      }
      const keys = top.keys || [];
      const unreachable = top.unreachable || [];
      state.textContent = (keys.length === 0
        ? 'no key was limited recently'
        : 'the last ' + top.window_seconds + ' s (' + top.scope + '): ' + top.over_limit_total +
          ' over-limit answers in all' + (top.hashed ? '; key values hashed' : '')) +
        partial(unreachable);
      state.className = unreachable.length === 0 ? 'muted' : 'muted error';
      const body = table.tBodies[0];
      body.replaceChildren();
      for (const k of keys) {
        const row = body.insertRow();
        cell(row, k.source || '', 'top-source');
        cell(row, k.domain || '', 'top-domain');
        cell(row, k.rule || '', 'top-rule');
        cell(row, keyText(k.key === undefined ? '' : k.key), 'top-key');
        cell(row, String(k.over_limit === undefined ? '' : k.over_limit), 'top-over num');
        cell(row, String(k.error === undefined ? '' : k.error), 'num');
        cell(row, String(k.hits === undefined ? '' : k.hits), 'num');
      }
      table.hidden = keys.length === 0;
    } catch (e) {
      topFailed(state, table, 'could not ask GET /v1/TopLimited: ' + e.message);
    }
  }

  // Shows why the panel has no answer, and hides the rows of an earlier one, which are stale now.
  function topFailed(state, table, message) {
    state.textContent = message;
    state.className = 'muted error';
    table.hidden = true;
  }

  async function refresh() {
    try {
      const answer = await ask(STATUS_URL, { cache: 'no-store' });
      if (!answer.ok) {
        throw new Error('GET /v1/Status answered ' + answer.status);
      }
      const status = jsonOf(answer.text);
      if (status === null) {
        $('fetch-error').textContent = notJson('/v1/Status', answer);
      } else {
        render(status);
        refreshes++;
        $('refreshes').textContent = String(refreshes);
        $('updated').textContent = new Date().toLocaleTimeString();
        $('fetch-error').textContent = '';
      }
    } catch (e) {
      $('fetch-error').textContent = 'cannot reach the node: ' + e.message;
    }
    await refreshTop();
    setTimeout(refresh, REFRESH_MS);
  }

  // Splits one line "key=value, key=value" into entries; "\," and "\=" escape inside a value.
  function parseDescriptor(line) {
    const entries = [];
    let key = '';
    let value = '';
    let inValue = false;
    const finish = () => {
      entries.push({ key: key.trim(), value: inValue ? value.trim() : '' });
      key = '';
      value = '';
      inValue = false;
    };
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (c === '\\' && i + 1 < line.length) {
        i++;
        if (inValue) {
          value += line[i];
        } else {
          key += line[i];
        }
      } else if (c === '=' && !inValue) {
        inValue = true;
      } else if (c === ',') {
        finish();
      } else if (inValue) {
        value += c;
      } else {
        key += c;
      }
    }
    finish();
    return { entries: entries };
  }

  // The form's limit override as the route reads it, or null when "Requests per unit" is empty. The
  // text goes as typed (a number when it is one), so the route judges it and names what is wrong.
  function limitOverride() {
    const text = $('explain-limit-requests').value.trim();
    if (text === '') {
      return null;
    }
    const number = /^-?[0-9]+$/.test(text) ? Number(text) : NaN;
    return {
      requests_per_unit: Number.isSafeInteger(number) ? number : text,
      unit: $('explain-limit-unit').value,
    };
  }

  async function explain(event) {
    event.preventDefault();
    const out = $('explain-answer');
    const lines = $('explain-descriptors').value.split('\n').filter((l) => l.trim() !== '');
    const limit = limitOverride();
    const descriptors = lines.map(parseDescriptor);
    if (limit !== null) {
      descriptors.forEach((d) => {
        d.limit = limit;
      });
    }
    const request = { domain: $('explain-domain').value, descriptors: descriptors };
    const mine = ++explainSeq;
    out.className = '';
    out.textContent = 'asking…';
    try {
      const answer = await ask(EXPLAIN_URL, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(request),
      });
      if (mine !== explainSeq) {
        return;
      }
      const body = jsonOf(answer.text);
      if (answer.ok && body !== null && Array.isArray(body.lines)) {
        out.textContent = body.lines.join('\n');
      } else {
        out.className = 'error';
        out.textContent = 'HTTP ' + answer.status + ': ' + (body !== null && body.message
          ? body.message
          : 'not an answer of Weir: ' + answer.text.trim().slice(0, 200));
      }
    } catch (e) {
      if (mine !== explainSeq) {
        return;
      }
      out.className = 'error';
      out.textContent = 'could not ask the node: ' + e.message;
    }
  }

  $('explain-form').addEventListener('submit', explain);
  refresh();
})();
