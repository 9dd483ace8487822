// The two baselines `make bench` compares against, in a process of their own: a bare Fastify route
// returning a fixed JSON body, and bare Fastify routes running a scenario's SQL through postgres.js.
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { sqlClient } from './processes.js';

const [, , port, databaseUrl, fixturesFile] = process.argv;
const fixtures = JSON.parse(fixturesFile ? readFileSync(fixturesFile, 'utf8') : '{}') as Record<string, unknown>;
const app = Fastify({ logger: false });

// Same JSON: each scenario's captured answer, served from memory.
app.all('/json/:scenario', async (req) => fixtures[(req.params as { scenario: string }).scenario] ?? {});

if (databaseUrl) {
  const sql = sqlClient(databaseUrl, 20);
  // The queries the API runs for these scenarios once the key is warm, written directly.
  app.get('/sql/organization/:id', async (req) => {
    const { id } = req.params as { id: string };
    const [[org], projects, [count]] = await Promise.all([
      sql`select * from organizations where id = ${id} limit 1`,
      sql`select * from projects where organization_id in (${id}) order by id`,
      sql`select organization_id, count(*)::int as n from organization_memberships m join users u on u.id = m.user_id
          where m.organization_id in (${id}) and u.is_active and u.email not like '%@posthogbot.user' group by 1`,
    ]);
    return { ...org, teams: projects, member_count: count?.n ?? 0 };
  });
  app.get('/sql/dashboards/:project', async (req) => {
    const project = Number((req.params as { project: string }).project);
    const [[count], rows] = await Promise.all([
      sql`select count(*)::int as n from dashboards where project_id = ${project} and not deleted`,
      sql`select * from dashboards where project_id = ${project} and not deleted
        order by pinned desc, name asc nulls last, id limit 100`,
    ]);
    const ids = rows.map((d) => d.id as number);
    const creators = [...new Set(rows.map((d) => d.created_by_id as number))];
    const [shared, privileges, users] = await Promise.all([
      sql`select dashboard_id from sharing_configurations where dashboard_id in ${sql(ids)} and enabled`,
      sql`select dashboard_id, level from dashboard_collaborators where dashboard_id in ${sql(ids)} and user_id = 1`,
      sql`select * from users where id in ${sql(creators)}`,
    ]);
    return { count: count?.n, results: rows, shared, privileges, users };
  });
  app.get('/sql/members/:org', async (req) => {
    const { org } = req.params as { org: string };
    const [[count], rows] = await Promise.all([
      sql`select count(*)::int as n from organization_memberships m join users u on u.id = m.user_id
          where m.organization_id = ${org} and u.is_active and u.email not like '%@posthogbot.user'`,
      sql`select m.*, row_to_json(u) as user from organization_memberships m join users u on u.id = m.user_id
          where m.organization_id = ${org} and u.is_active and u.email not like '%@posthogbot.user'
          order by m.joined_at desc, m.id desc limit 100`,
    ]);
    return { count: count?.n, results: rows };
  });
  app.get('/sql/events/:project', async (req) => {
    const project = Number((req.params as { project: string }).project);
    const event = (req.query as { event?: string }).event;
    const rows = event
      ? await sql`select * from events where project_id = ${project} and event = ${event}
                  order by timestamp desc nulls last, id desc nulls last limit 101`
      : await sql`select * from events where project_id = ${project}
                  order by timestamp desc nulls last, id desc nulls last limit 101`;
    return { next: null, results: rows.slice(0, 100) };
  });
  app.get('/sql/query_count_by_event/:project', async (req) => {
    const project = Number((req.params as { project: string }).project);
    const rows =
      await sql`select event, count(*) as n from events where project_id = ${project} group by event limit 101`;
    return { results: rows.map((r) => [r.event, Number(r.n)]), hasMore: false };
  });
  app.get('/sql/query_property/:project', async (req) => {
    const project = Number((req.params as { project: string }).project);
    const rows = await sql`select count(*) as n from events
      where project_id = ${project} and properties ->> '$browser' = ${'Firefox'}`;
    return { results: rows.map((r) => [Number(r.n)]), hasMore: false };
  });
  // A daily trend as a person writes it: one grouped statement, the days of the range filled in here.
  app.get('/sql/trends/:project', async (req) => {
    const project = Number((req.params as { project: string }).project);
    const { math, breakdown } = req.query as { math: string; breakdown?: string };
    const [range] = await sql`select date_trunc('day', now() - interval '30 days') as f, now() as t`;
    const value = math === 'dau' ? sql`count(distinct coalesce(person_id::text, distinct_id))` : sql`count(*)`;
    const by = breakdown ? sql`coalesce(properties ->> ${breakdown}, '')` : sql`''`;
    const rows = await sql`select to_char(date_trunc('day', timestamp), 'YYYY-MM-DD') as day, ${by} as bv,
        ${value} as n
      from events where project_id = ${project} and event = '$pageview'
        and timestamp >= ${range!.f} and timestamp <= ${range!.t}
      group by 1, 2`;
    const days: string[] = [];
    for (let d = new Date(range!.f); d <= range!.t; d.setUTCDate(d.getUTCDate() + 1)) {
      days.push(d.toISOString().slice(0, 10));
    }
    const series = new Map<string, Map<string, number>>();
    for (const r of rows) {
      if (!series.has(r.bv)) series.set(r.bv, new Map());
      series.get(r.bv)!.set(r.day, Number(r.n));
    }
    return {
      results: [...series].map(([bv, values]) => ({
        breakdown_value: bv,
        days,
        data: days.map((d) => values.get(d) ?? 0),
      })),
    };
  });
}

await app.listen({ host: '127.0.0.1', port: Number(port) });
process.stdout.write('ready\n');
