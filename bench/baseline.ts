// The two baselines `make bench` compares against, in a process of their own: a bare Fastify route
// returning a fixed JSON body, and bare Fastify routes running a scenario's SQL through postgres.js.
import Fastify from 'fastify';
import postgres from 'postgres';

const [, , port, databaseUrl, fixturesJson] = process.argv;
const fixtures = JSON.parse(fixturesJson ?? '{}') as Record<string, unknown>;
const app = Fastify({ logger: false });

// Same JSON: each scenario's captured answer, served from memory.
app.get('/json/:scenario', async (req) => fixtures[(req.params as { scenario: string }).scenario] ?? {});

if (databaseUrl) {
  const sql = postgres(databaseUrl, { max: 20, onnotice: () => {} });
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
  app.get('/sql/projects', async () => {
    const [[count], rows] = await Promise.all([
      sql`select count(*)::int as n from projects`,
      sql`select * from projects order by id limit 100`,
    ]);
    return { count: count?.n, results: rows };
  });
}

await app.listen({ host: '127.0.0.1', port: Number(port) });
process.stdout.write('ready\n');
