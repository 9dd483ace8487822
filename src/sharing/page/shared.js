// The shared page: draws a shared dashboard or insight from the JSON its HTML carries (PostHog's exported
// data), with Chart.js for charts and marked + DOMPurify for text tiles. It runs under a CSP that allows
// this origin's scripts only, so nothing here evaluates strings or writes inline handlers; the only HTML
// written as markup is Markdown that DOMPurify has sanitized.
/* global Chart, marked, DOMPurify */
(() => {
  const COLORS = ['#1d4aff', '#621da6', '#42827e', '#ce0e74', '#f14f58', '#7c440e', '#529a0a', '#0476fb', '#fe729e'];
  const PRESETS = [
    ['-24h', 'Last 24 hours'],
    ['-7d', 'Last 7 days'],
    ['-14d', 'Last 14 days'],
    ['-30d', 'Last 30 days'],
    ['-90d', 'Last 90 days'],
    ['-180d', 'Last 180 days'],
    ['mStart', 'Month to date'],
    ['yStart', 'Year to date'],
    ['all', 'All time'],
  ];
  const UNITS = { h: 'hour', d: 'day', w: 'week', m: 'month', q: 'quarter', y: 'year', M: 'minute' };

  const app = document.getElementById('app');
  const charts = [];
  let current = JSON.parse(document.getElementById('shared-data').textContent);

  /** An element with attributes and children (strings become text, never markup). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'className') node.className = value;
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function rangeLabel(from, to) {
    const preset = PRESETS.find(([value]) => value === from);
    let text = preset ? preset[1] : null;
    const m = /^-(\d+)([hdwmqyM])$/.exec(from || '');
    if (!text && m) text = `Last ${m[1]} ${UNITS[m[2]]}${m[1] === '1' ? '' : 's'}`;
    if (!text && from) text = `From ${from}`;
    if (!text) text = 'Last 7 days';
    return to ? `${text} until ${to}` : text;
  }

  const day = (iso) => (iso ? String(iso).slice(0, 10) : '');

  function insightsOf(data) {
    if (data.insight) return [data.insight];
    return (data.dashboard?.tiles || []).map((t) => t.insight).filter(Boolean);
  }

  /** The range the page shows: the viewer's, else the dashboard's, else the insight's own. */
  function shownRange(data) {
    if (data.dateRange) return data.dateRange;
    const filters = data.dashboard?.filters || {};
    if (filters.date_from || filters.date_to) return { date_from: filters.date_from, date_to: filters.date_to };
    // Without a range of the dashboard's own, each insight shows its own: the first one's is named.
    for (const insight of insightsOf(data)) {
      const source = insight.query?.source || insight.query;
      if (source?.dateRange) return source.dateRange;
    }
    return { date_from: null, date_to: null };
  }

  function resolvedRange(data) {
    for (const insight of insightsOf(data)) {
      const r = insight.resolved_date_range;
      if (r?.date_from) return `${day(r.date_from)} – ${day(r.date_to)}`;
    }
    return null;
  }

  function dateBar(data) {
    const range = shownRange(data);
    const resolved = resolvedRange(data);
    const bar = el(
      'div',
      { className: 'date-range' },
      el(
        'span',
        { id: 'date-range' },
        `Date range: ${rangeLabel(range.date_from, range.date_to)}`,
        resolved ? ` (${resolved})` : '',
      ),
    );
    if (!data.allowDateRangeChange) return bar;
    const select = el(
      'select',
      { id: 'date-from', 'aria-label': 'Date range' },
      PRESETS.map(([value, label]) => el('option', { value, selected: value === range.date_from }, label)),
      el('option', { value: 'custom', selected: !PRESETS.some(([v]) => v === range.date_from) }, 'Custom…'),
    );
    const isoDay = (text) => (/^\d{4}-\d{2}-\d{2}/.test(text || '') ? text.slice(0, 10) : null);
    const from = el('input', { type: 'date', id: 'custom-from', 'aria-label': 'From', value: isoDay(range.date_from) });
    const to = el('input', { type: 'date', id: 'custom-to', 'aria-label': 'To', value: isoDay(range.date_to) });
    const custom = el('span', { className: 'custom' }, from, ' – ', to);
    const toggle = () => custom.classList.toggle('hidden', select.value !== 'custom');
    select.addEventListener('change', toggle);
    const form = el('form', { id: 'range' }, select, custom, el('button', { type: 'submit' }, 'Apply'));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const chosen =
        select.value === 'custom'
          ? { date_from: from.value || null, date_to: to.value || null }
          : { date_from: select.value, date_to: null };
      void load(data.shareToken, chosen);
    });
    bar.append(form);
    toggle();
    return bar;
  }

  function table(headers, rows) {
    return el(
      'table',
      {},
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          headers.map((h) => el('th', {}, h)),
        ),
      ),
      el(
        'tbody',
        {},
        rows.map((row) =>
          el(
            'tr',
            {},
            row.map((cell) => el('td', {}, typeof cell === 'object' && cell !== null ? JSON.stringify(cell) : cell)),
          ),
        ),
      ),
    );
  }

  function chart(container, config, legend) {
    const canvas = el('canvas', { role: 'img', 'aria-label': config.label || 'Chart' });
    container.append(el('div', { className: 'chart' }, canvas));
    const options = {
      animation: false,
      maintainAspectRatio: false,
      responsive: true,
      plugins: { legend: { display: legend } },
      ...config.options,
    };
    charts.push(new Chart(canvas, { type: config.type, data: config.data, options }));
  }

  const seriesLabel = (s) => s.label ?? s.breakdown_value ?? s.status ?? '';
  const color = (i) => COLORS[i % COLORS.length];

  /** How an insight is drawn: by its query kind and, for trends, PostHog's display types. */
  function drawInsight(container, insight, data) {
    const query = insight.query || {};
    const source = query.source || query;
    const result = insight.result;
    const legend = Boolean(data.legend);
    if (result === null || result === undefined) {
      container.append(el('p', { className: 'empty' }, 'No results yet.'));
      return;
    }
    const kind = source.kind;
    if (kind === 'TrendsQuery' || kind === 'StickinessQuery' || kind === 'LifecycleQuery') {
      const display = kind === 'TrendsQuery' ? source.trendsFilter?.display || 'ActionsLineGraph' : null;
      const series = Array.isArray(result) ? result : [];
      if (display === 'BoldNumber') {
        const value = series[0]?.aggregated_value ?? 0;
        container.append(el('div', { className: 'bold-number' }, Number(value).toLocaleString()));
        return;
      }
      if (display === 'ActionsTable' || display === 'WorldMap') {
        container.append(
          table(
            ['Series', 'Value'],
            series.map((s) => [seriesLabel(s), s.aggregated_value]),
          ),
        );
        return;
      }
      if (display === 'ActionsPie' || display === 'ActionsBarValue') {
        const pie = display === 'ActionsPie';
        chart(
          container,
          {
            type: pie ? 'pie' : 'bar',
            data: {
              labels: series.map(seriesLabel),
              datasets: [
                {
                  label: insight.name || 'Total',
                  data: series.map((s) => s.aggregated_value),
                  backgroundColor: series.map((_, i) => color(i)),
                },
              ],
            },
            options: pie ? {} : { indexAxis: 'y' },
          },
          legend,
        );
        return;
      }
      const bar = kind === 'LifecycleQuery' || display === 'ActionsBar' || display === 'ActionsStackedBar';
      const stacked = kind === 'LifecycleQuery' || display === 'ActionsStackedBar';
      chart(
        container,
        {
          type: bar ? 'bar' : 'line',
          data: {
            labels: series[0]?.labels || series[0]?.days || [],
            datasets: series.map((s, i) => ({
              label: seriesLabel(s),
              data: s.data || [],
              borderColor: color(i),
              backgroundColor: display === 'ActionsAreaGraph' ? `${color(i)}33` : color(i),
              fill: display === 'ActionsAreaGraph',
              tension: 0,
            })),
          },
          options: stacked ? { scales: { x: { stacked: true }, y: { stacked: true } } } : {},
        },
        legend,
      );
      if (data.detailed) {
        const labels = series[0]?.labels || [];
        container.append(
          table(
            ['Series', ...labels],
            series.map((s) => [seriesLabel(s), ...(s.data || [])]),
          ),
        );
      }
      return;
    }
    if (kind === 'FunnelsQuery') {
      const groups = Array.isArray(result[0]) ? result : [result];
      const steps = groups[0] || [];
      chart(
        container,
        {
          type: 'bar',
          data: {
            labels: steps.map((s) => s.custom_name || s.name),
            datasets: groups.map((g, i) => ({
              label: g[0]?.breakdown_value ?? 'Persons',
              data: g.map((s) => s.count),
              backgroundColor: color(i),
            })),
          },
        },
        legend,
      );
      if (data.detailed)
        container.append(
          table(
            ['Step', 'Persons'],
            steps.map((s) => [s.custom_name || s.name, s.count]),
          ),
        );
      return;
    }
    if (kind === 'RetentionQuery') {
      const width = Math.max(0, ...result.map((r) => (r.values || []).length));
      const headers = ['Cohort', ...Array.from({ length: width }, (_, i) => `Period ${i}`)];
      container.append(
        table(
          headers,
          result.map((r) => [r.label, ...(r.values || []).map((v) => v.count)]),
        ),
      );
      return;
    }
    const columns = insight.columns || [];
    const rows = Array.isArray(result) ? result : [];
    container.append(
      table(
        columns,
        rows.map((r) => (Array.isArray(r) ? r : [r])),
      ),
    );
  }

  function markdown(body) {
    const html = DOMPurify.sanitize(marked.parse(body || '', { async: false }), { USE_PROFILES: { html: true } });
    const node = el('div', { className: 'markdown' });
    node.innerHTML = html;
    for (const link of node.querySelectorAll('a[href]')) {
      link.setAttribute('target', '_blank');
      link.setAttribute('rel', 'noopener noreferrer');
    }
    return node;
  }

  function tileOrder(a, b) {
    const la = a.layouts?.sm || a.layouts?.lg || {};
    const lb = b.layouts?.sm || b.layouts?.lg || {};
    return (la.y ?? 0) - (lb.y ?? 0) || (la.x ?? 0) - (lb.x ?? 0) || a.id - b.id;
  }

  function insightSection(insight, data, attrs) {
    const section = el(
      'section',
      { className: 'tile insight', ...attrs },
      el('h2', {}, insight.name || insight.derived_name || 'Untitled'),
      insight.description ? el('p', { className: 'description' }, insight.description) : null,
    );
    drawInsight(section, insight, data);
    if (insight.last_refresh && !data.hideExtraDetails) {
      section.append(
        el('p', { className: 'refreshed' }, `Computed ${new Date(insight.last_refresh).toLocaleString()}`),
      );
    }
    return section;
  }

  function render(data) {
    for (const c of charts.splice(0)) c.destroy();
    app.replaceChildren();
    const subject = data.dashboard || data.insight || {};
    if (!data.noHeader) {
      app.append(
        el(
          'header',
          {},
          el('h1', {}, subject.name || subject.derived_name || 'Shared'),
          subject.description ? el('p', { className: 'description' }, subject.description) : null,
        ),
      );
    }
    app.append(dateBar(data));
    const grid = el('div', { className: 'tiles' });
    if (data.insight) grid.append(insightSection(data.insight, data, { 'data-insight-id': data.insight.id }));
    for (const tile of [...(data.dashboard?.tiles || [])].sort(tileOrder)) {
      const wide = (tile.layouts?.sm?.w ?? 6) >= 12;
      const attrs = { 'data-tile-id': tile.id, className: wide ? 'wide' : null };
      if (tile.insight) {
        const section = insightSection(tile.insight, data, { 'data-tile-id': tile.id });
        if (wide) section.classList.add('wide');
        grid.append(section);
      } else if (tile.text) {
        grid.append(
          el('section', { ...attrs, className: `tile text${wide ? ' wide' : ''}` }, markdown(tile.text.body)),
        );
      }
    }
    app.append(grid);
    if (!data.whitelabel) app.append(el('footer', {}, 'Shared from a PostHog-compatible analytics server'));
  }

  function failure(message) {
    app.querySelector('.error')?.remove();
    app.prepend(el('p', { className: 'error', role: 'alert' }, message));
  }

  /** The share again as JSON, over another date range: the server computes it. */
  async function load(shareToken, range) {
    const params = new URLSearchParams();
    if (range?.date_from) params.set('date_from', range.date_from);
    if (range) params.set('date_to', range.date_to || '');
    const headers = { accept: 'application/json' };
    if (shareToken) headers.authorization = `Bearer ${shareToken}`;
    app.setAttribute('aria-busy', 'true');
    try {
      const res = await fetch(`${location.pathname}.json${range ? `?${params}` : ''}`, { headers });
      const body = await res.json();
      if (!res.ok) return failure(body.detail || `The share could not be read (${res.status}).`);
      current = { ...body, shareToken };
      render(current);
      if (range) history.replaceState(null, '', `${location.pathname}?${params}`);
    } catch {
      failure('The share could not be read.');
    } finally {
      app.removeAttribute('aria-busy');
    }
  }

  function renderUnlock(data) {
    const input = el('input', { type: 'password', id: 'password', autocomplete: 'current-password', required: true });
    const form = el(
      'form',
      { id: 'unlock', className: 'notice' },
      el('h1', {}, 'This share is protected'),
      el('label', { for: 'password' }, 'Password'),
      input,
      el('button', { type: 'submit' }, 'Open'),
    );
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const res = await fetch(location.pathname, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ password: input.value }),
      });
      if (res.status === 429) return failure('Too many attempts: try again later.');
      if (!res.ok) return failure('Incorrect password.');
      const { shareToken } = await res.json();
      await load(shareToken, null);
    });
    app.replaceChildren(form);
    if (!data.whitelabel) app.append(el('footer', {}, 'Shared from a PostHog-compatible analytics server'));
  }

  if (current.type === 'unlock') renderUnlock(current);
  else render(current);
})();
