// The hand-written server `make bench` measures the API's reads against: what a competent engineer
// writes in an afternoon. Bare Fastify and postgres.js (pool 10), no cache; every read makes three
// queries (the key by its sha256, the caller's membership, the data) and answers through the
// contract's response schema, at the API's own paths. Run as: tsx bench/handwritten.ts <port> <database url>
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { sqlClient } from './processes.js';

const [, , port, databaseUrl] = process.argv;
const sql = sqlClient(databaseUrl!, 10);
const spec = JSON.parse(readFileSync('generated/openapi.json', 'utf8')) as {
  components: { schemas: Record<string, unknown> };
};

/**
 * The contract's schema of a 200 answer, for Fastify's serializer. `required` is dropped: the rows
 * below are the tables' own columns, and a field the API computes that a row lacks is left out of
 * the answer instead of failing it (bench/results.md prints both answers' sizes).
 */
function responseSchema(name: string): unknown {
  const strip = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(strip)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .filter(([k]) => k !== 'required')
              .map(([k, x]) => [k, strip(x)]),
          )
        : v;
  return { $ref: `#/components/schemas/${name}`, components: strip(spec.components) };
}

const app = Fastify({ logger: false });

async function caller(req: FastifyRequest, reply: FastifyReply): Promise<number | undefined> {
  const value = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (!value) return void reply.code(401).send({ detail: 'Authentication credentials were not provided.' });
  const hash = `sha256$${createHash('sha256').update(value).digest('hex')}`;
  const [key] = await sql`select k.user_id from personal_api_keys k join users u on u.id = k.user_id
    where k.secure_value = ${hash} and u.is_active`;
  if (!key) return void reply.code(401).send({ detail: 'Invalid key.' });
  return key.user_id as number;
}

async function orgMember(org: string, user: number): Promise<boolean> {
  const [m] =
    await sql`select level from organization_memberships where organization_id = ${org} and user_id = ${user}`;
  return Boolean(m);
}

async function projectMember(project: number, user: number): Promise<boolean> {
  const [m] = await sql`select m.level from projects p join organization_memberships m
    on m.organization_id = p.organization_id and m.user_id = ${user} where p.id = ${project}`;
  return Boolean(m);
}

const page = (rows: Record<string, unknown>[]) => ({
  count: Number(rows[0]?.total ?? 0),
  next: null,
  previous: null,
  results: rows,
});
const notFound = (reply: FastifyReply) => reply.code(404).send({ detail: 'Not found.' });
type Params = Record<string, string>;

app.get(
  '/api/organizations/:id/',
  { schema: { response: { 200: responseSchema('Organization') } } },
  async (req, reply) => {
    const user = await caller(req, reply);
    if (user === undefined) return reply;
    const { id } = req.params as Params;
    if (!(await orgMember(id!, user))) return notFound(reply);
    const [org] = await sql`select o.*,
      (select coalesce(json_agg(p order by p.id), '[]') from projects p where p.organization_id = o.id) as teams,
      (select count(*)::int from organization_memberships m join users u on u.id = m.user_id
        where m.organization_id = o.id and u.is_active) as member_count
    from organizations o where o.id = ${id!}`;
    return { ...org, projects: org!.teams };
  },
);

app.get(
  '/api/projects/',
  { schema: { response: { 200: responseSchema('PaginatedProjectBasicList') } } },
  async (req, reply) => {
    const user = await caller(req, reply);
    if (user === undefined) return reply;
    const orgs = (await sql`select organization_id from organization_memberships where user_id = ${user}`).map(
      (r) => r.organization_id as string,
    );
    return page(
      await sql`select p.*, count(*) over () as total from projects p
        where p.organization_id in ${sql(orgs)} order by p.id limit 100`,
    );
  },
);

app.get(
  '/api/projects/:project/dashboards/',
  { schema: { response: { 200: responseSchema('PaginatedDashboardBasicList') } } },
  async (req, reply) => {
    const user = await caller(req, reply);
    if (user === undefined) return reply;
    const project = Number((req.params as Params).project);
    if (!(await projectMember(project, user))) return notFound(reply);
    return page(
      await sql`select d.*, row_to_json(u) as created_by, count(*) over () as total,
      exists (select from sharing_configurations s where s.dashboard_id = d.id and s.enabled) as is_shared
    from dashboards d left join users u on u.id = d.created_by_id
    where d.project_id = ${project} and not d.deleted order by d.pinned desc, d.name, d.id limit 100`,
    );
  },
);

app.get(
  '/api/projects/:project/dashboards/:id/',
  { schema: { response: { 200: responseSchema('Dashboard') } } },
  async (req, reply) => {
    const user = await caller(req, reply);
    if (user === undefined) return reply;
    const { project, id } = req.params as Params;
    if (!(await projectMember(Number(project), user))) return notFound(reply);
    const [d] = await sql`select d.*, row_to_json(u) as created_by,
      (select coalesce(json_agg(t order by t.id), '[]') from dashboard_tiles t
        where t.dashboard_id = d.id and not t.deleted) as tiles
    from dashboards d left join users u on u.id = d.created_by_id
    where d.id = ${Number(id)} and d.project_id = ${Number(project)} and not d.deleted`;
    return d ?? notFound(reply);
  },
);

app.get(
  '/api/organizations/:org/members/',
  { schema: { response: { 200: responseSchema('PaginatedOrganizationMemberList') } } },
  async (req, reply) => {
    const user = await caller(req, reply);
    if (user === undefined) return reply;
    const { org } = req.params as Params;
    if (!(await orgMember(org!, user))) return notFound(reply);
    return page(
      await sql`select m.*, row_to_json(u) as user, count(*) over () as total
    from organization_memberships m join users u on u.id = m.user_id
    where m.organization_id = ${org!} and u.is_active order by m.joined_at desc, m.id desc limit 100`,
    );
  },
);

app.get(
  '/api/projects/:project/event_definitions/',
  { schema: { response: { 200: responseSchema('PaginatedEventDefinitionList') } } },
  async (req, reply) => {
    const user = await caller(req, reply);
    if (user === undefined) return reply;
    const project = Number((req.params as Params).project);
    if (!(await projectMember(project, user))) return notFound(reply);
    return page(
      await sql`select e.*, count(*) over () as total from event_definitions e
        where e.project_id = ${project} order by e.name limit 100`,
    );
  },
);

app.get(
  '/api/projects/:project/events/',
  { schema: { response: { 200: responseSchema('EventList') } } },
  async (req, reply) => {
    const user = await caller(req, reply);
    if (user === undefined) return reply;
    const project = Number((req.params as Params).project);
    if (!(await projectMember(project, user))) return notFound(reply);
    const rows = await sql`select * from events where project_id = ${project}
      order by timestamp desc nulls last, id desc nulls last limit 101`;
    return { next: null, results: rows.slice(0, 100).map((r) => ({ ...r, id: r.uuid })) };
  },
);

await app.listen({ host: '127.0.0.1', port: Number(port) });
process.stdout.write('ready\n');
