// The hand-written server `make bench` measures the API's reads against: what a competent engineer
// writes in an afternoon. Bare Fastify and postgres.js (pool 10), no cache; every read makes three
// queries (the key by its sha256, the caller's membership, the data) and answers through the
// contract's response schema, at the API's own paths, with the API's JSON: bench/run.ts compares the
// two answers before it measures them. Constants the API fills in are constants here too.
// Run as: tsx bench/handwritten.ts <port> <database url>
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { chainToElements } from '../src/capture/elements.js';
import { sqlClient } from './processes.js';

const [, , port, databaseUrl] = process.argv;
const sql = sqlClient(databaseUrl!, 10);
const spec = JSON.parse(readFileSync('generated/openapi.json', 'utf8')) as {
  components: { schemas: Record<string, unknown> };
};

/** The contract's schema of a 200 answer, for Fastify's serializer. */
const responseSchema = (name: string): unknown => ({
  $ref: `#/components/schemas/${name}`,
  components: spec.components,
});

const app = Fastify({ logger: false });
// postgres.js rows, untyped: each field is named where the answer is built.
type Row = Record<string, any>;
type Params = Record<string, string>;

async function caller(req: FastifyRequest, reply: FastifyReply): Promise<number | undefined> {
  const value = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (!value) return void reply.code(401).send({ detail: 'Authentication credentials were not provided.' });
  const hash = `sha256$${createHash('sha256').update(value).digest('hex')}`;
  const [key] = await sql`select k.user_id from personal_api_keys k join users u on u.id = k.user_id
    where k.secure_value = ${hash} and u.is_active`;
  if (!key) return void reply.code(401).send({ detail: 'Invalid key.' });
  return key.user_id as number;
}

/** The caller's level in the organization, or undefined when not a member. */
async function orgLevel(org: string, user: number): Promise<number | undefined> {
  const [m] =
    await sql`select level from organization_memberships where organization_id = ${org} and user_id = ${user}`;
  return m?.level as number | undefined;
}

async function projectLevel(project: number, user: number): Promise<number | undefined> {
  const [m] = await sql`select m.level from projects p join organization_memberships m
    on m.organization_id = p.organization_id and m.user_id = ${user} where p.id = ${project}`;
  return m?.level as number | undefined;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);
/** A user as the API embeds one (UserBasic), from a row or a json_build_object of its columns. */
const userBasic = (u: Row | null) =>
  u && {
    id: u.id,
    uuid: u.uuid,
    distinct_id: u.distinct_id,
    first_name: u.first_name,
    last_name: u.last_name,
    email: u.email,
    is_email_verified: u.is_email_verified,
    hedgehog_config: u.hedgehog_config,
    role_at_organization: u.role_at_organization,
  };
const projectBasic = (p: Row) => ({
  id: p.id,
  uuid: p.uuid,
  organization: p.organization_id,
  project_id: p.id,
  api_token: p.api_token,
  name: p.name,
  completed_snippet_onboarding: p.completed_snippet_onboarding,
  has_completed_onboarding_for: p.has_completed_onboarding_for,
  ingested_event: p.ingested_event,
  is_demo: p.is_demo,
  timezone: p.timezone,
  access_control: p.access_control,
});

/** DRF's limit/offset page of the first 100 rows, each row carrying the total. */
function page(req: FastifyRequest, rows: Row[], results: unknown[]) {
  const count = Number(rows[0]?.total ?? 0);
  let next: string | null = null;
  if (count > 100) {
    const u = new URL(req.url, `${req.protocol}://${req.host}`);
    u.searchParams.set('limit', '100');
    u.searchParams.set('offset', '100');
    next = u.toString();
  }
  return { count, next, previous: null, results };
}
const notFound = (reply: FastifyReply) => reply.code(404).send({ detail: 'Not found.' });

const PRODUCT_FEATURES = [
  ['advanced_permissions', 'Advanced permissions'],
  ['tagging', 'Dashboard tags'],
  ['ingestion_taxonomy', 'Ingestion taxonomy'],
  ['automatic_provisioning', 'Automatic provisioning'],
  ['organizations_projects', 'Multiple organizations and projects'],
  ['data_pipelines', 'Data pipelines'],
  ['high_frequency_batch_exports', 'High-frequency batch exports'],
  ['sso_enforcement', 'SSO enforcement'],
  ['saml', 'SAML'],
].map(([key, name]) => ({ key, name }));

app.get(
  '/api/organizations/:id/',
  { schema: { response: { 200: responseSchema('Organization') } } },
  async (req, reply) => {
    const user = await caller(req, reply);
    if (user === undefined) return reply;
    const { id } = req.params as Params;
    const level = await orgLevel(id!, user);
    if (level === undefined) return notFound(reply);
    const [o] = await sql`select o.*,
      (select coalesce(json_agg(p order by p.id), '[]') from projects p where p.organization_id = o.id) as teams,
      (select count(*)::int from organization_memberships m join users u on u.id = m.user_id
        where m.organization_id = o.id and u.is_active and u.email not like '%@posthogbot.user') as member_count
    from organizations o where o.id = ${id!}`;
    if (!o) return notFound(reply);
    return {
      id: o.id,
      name: o.name,
      slug: o.slug,
      logo_media_id: o.logo_media_id,
      created_at: iso(o.created_at),
      updated_at: iso(o.updated_at),
      membership_level: level,
      plugins_access_level: o.plugins_access_level,
      teams: o.teams.map(projectBasic),
      projects: o.teams.map((p: Row) => ({ id: p.id, organization_id: p.organization_id, name: p.name })),
      available_product_features: PRODUCT_FEATURES,
      is_member_join_email_enabled: o.is_member_join_email_enabled,
      metadata: { instance_tag: process.env.INSTANCE_TAG || 'none' },
      customer_id: o.customer_id,
      enforce_2fa: o.enforce_2fa,
      members_can_invite: o.members_can_invite,
      members_can_use_personal_api_keys: o.members_can_use_personal_api_keys,
      allow_publicly_shared_resources: o.allow_publicly_shared_resources,
      member_count: o.member_count,
      is_ai_data_processing_approved: o.is_ai_data_processing_approved,
      default_experiment_stats_method: o.default_experiment_stats_method,
      default_anonymize_ips: o.default_anonymize_ips,
      default_role_id: null,
    };
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
    const rows = await sql`select p.*, count(*) over () as total from projects p
      where p.organization_id in ${sql(orgs)} order by p.id limit 100`;
    return page(req, rows, rows.map(projectBasic));
  },
);

const USER_BASIC = `json_build_object('id', u.id, 'uuid', u.uuid, 'distinct_id', u.distinct_id,
  'first_name', u.first_name, 'last_name', u.last_name, 'email', u.email, 'is_email_verified', u.is_email_verified,
  'hedgehog_config', u.hedgehog_config, 'role_at_organization', u.role_at_organization)`;

/** PostHog's dashboard permissions with every licence on (21: everyone edits, 37: collaborators only). */
function dashboardBasic(d: Row, user: number, level: number) {
  const canRestrict = d.created_by_id === user || level >= 8;
  const privilege = d.restriction_level === 21 || canRestrict ? 37 : (d.privilege ?? 21);
  const canEdit = d.restriction_level < 37 || privilege >= 37;
  return {
    id: d.id,
    name: d.name,
    description: d.description,
    pinned: d.pinned,
    created_at: iso(d.created_at),
    created_by: userBasic(d.created_by),
    is_shared: d.is_shared,
    deleted: d.deleted,
    creation_mode: d.creation_mode,
    tags: d.tags,
    restriction_level: d.restriction_level,
    effective_restriction_level: d.restriction_level,
    effective_privilege_level: privilege,
    last_accessed_at: iso(d.last_accessed_at),
    last_viewed_at: null,
    user_access_level: canRestrict ? 'manager' : canEdit ? 'editor' : 'viewer',
    access_control_version: d.restriction_level > 21 ? 'v1' : 'v2',
    last_refresh: iso(d.last_refresh),
    team_id: d.project_id,
  };
}

app.get(
  '/api/projects/:project/dashboards/',
  { schema: { response: { 200: responseSchema('PaginatedDashboardBasicList') } } },
  async (req, reply) => {
    const user = await caller(req, reply);
    if (user === undefined) return reply;
    const project = Number((req.params as Params).project);
    const level = await projectLevel(project, user);
    if (level === undefined) return notFound(reply);
    const rows = await sql`select d.*, ${sql.unsafe(USER_BASIC)} as created_by, count(*) over () as total,
      exists (select from sharing_configurations s where s.dashboard_id = d.id and s.enabled) as is_shared,
      (select c.level from dashboard_collaborators c where c.dashboard_id = d.id and c.user_id = ${user}) as privilege
    from dashboards d left join users u on u.id = d.created_by_id
    where d.project_id = ${project} and not d.deleted and d.creation_mode <> 'unlisted'
    order by d.pinned desc, d.name, d.id limit 100`;
    return page(
      req,
      rows,
      rows.map((d) =>
        dashboardBasic({ ...d, created_by: d.created_by_id === null ? null : d.created_by }, user, level),
      ),
    );
  },
);

/** A tile's place on the `sm` grid: top to bottom, then left to right, unplaced ones last (at 100). */
const place = (t: Row) => {
  const at = (v: unknown) => (typeof v === 'number' ? v : 100);
  return [at(t.layouts?.sm?.y), at(t.layouts?.sm?.x)] as const;
};

app.get(
  '/api/projects/:project/dashboards/:id/',
  { schema: { response: { 200: responseSchema('Dashboard') } } },
  async (req, reply) => {
    const user = await caller(req, reply);
    if (user === undefined) return reply;
    const { project, id } = req.params as Params;
    const level = await projectLevel(Number(project), user);
    if (level === undefined) return notFound(reply);
    // The API also records the read in last_accessed_at (once a minute); this baseline only reads.
    const [d] = await sql`select d.*,
      (select ${sql.unsafe(USER_BASIC)} from users u where u.id = d.created_by_id) as created_by,
      exists (select from sharing_configurations s where s.dashboard_id = d.id and s.enabled) as is_shared,
      (select c.level from dashboard_collaborators c where c.dashboard_id = d.id and c.user_id = ${user}) as privilege,
      (select coalesce(json_agg(json_build_object('id', t.id, 'body', t.body, 'layouts', t.layouts, 'color', t.color,
          'last_modified_at', t.last_modified_at,
          'created_by', (select ${sql.unsafe(USER_BASIC)} from users u where u.id = t.created_by_id),
          'last_modified_by', (select ${sql.unsafe(USER_BASIC)} from users u where u.id = t.last_modified_by_id))
        order by t.id), '[]') from dashboard_tiles t where t.dashboard_id = d.id and not t.deleted) as tiles
    from dashboards d
    where d.id = ${Number(id)} and d.project_id = ${Number(project)} and not d.deleted`;
    if (!d) return notFound(reply);
    const tiles = (d.tiles as Row[]).sort((a, b) => {
      const [ay, ax] = place(a);
      const [by, bx] = place(b);
      return ay - by || ax - bx || a.id - b.id;
    });
    const empty = (o: object) => !Object.keys(o).length;
    return {
      ...dashboardBasic(d, user, level),
      use_template: d.use_template,
      use_dashboard: d.use_dashboard,
      delete_insights: false,
      filters: d.filters,
      variables: d.variables,
      breakdown_colors: d.breakdown_colors,
      data_color_theme_id: d.data_color_theme_id,
      persisted_filters: empty(d.filters) ? null : d.filters,
      persisted_variables: empty(d.variables) ? null : d.variables,
      tiles: tiles.map((t, order) => ({
        id: t.id,
        text: {
          body: t.body,
          created_by: userBasic(t.created_by),
          last_modified_at: new Date(t.last_modified_at).toISOString(),
          last_modified_by: userBasic(t.last_modified_by),
        },
        insight: null,
        layouts: t.layouts,
        color: t.color,
        order,
      })),
    };
  },
);

app.get(
  '/api/organizations/:org/members/',
  { schema: { response: { 200: responseSchema('PaginatedOrganizationMemberList') } } },
  async (req, reply) => {
    const user = await caller(req, reply);
    if (user === undefined) return reply;
    const { org } = req.params as Params;
    if ((await orgLevel(org!, user)) === undefined) return notFound(reply);
    const rows = await sql`select m.*, row_to_json(u) as user, count(*) over () as total,
      (select max(k.last_used_at) from personal_api_keys k where k.user_id = u.id) as last_login
    from organization_memberships m join users u on u.id = m.user_id
    where m.organization_id = ${org!} and u.is_active and u.email not like '%@posthogbot.user'
    order by m.joined_at desc, m.id desc limit 100`;
    return page(
      req,
      rows,
      rows.map((m) => ({
        id: m.id,
        user: userBasic(m.user),
        level: m.level,
        joined_at: iso(m.joined_at),
        updated_at: iso(m.updated_at),
        is_2fa_enabled: false,
        has_social_auth: false,
        last_login: iso(m.last_login),
      })),
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
    if ((await projectLevel(project, user)) === undefined) return notFound(reply);
    const rows = await sql`select e.*, count(*) over () as total,
      (select ${sql.unsafe(USER_BASIC)} from users u where u.id = e.owner_id) as owner,
      (select ${sql.unsafe(USER_BASIC)} from users u where u.id = e.updated_by_id) as updated_by,
      (select ${sql.unsafe(USER_BASIC)} from users u where u.id = e.verified_by_id) as verified_by
    from event_definitions e where e.project_id = ${project}
    order by (e.last_seen_at at time zone 'UTC')::date desc nulls last, e.name, e.id limit 100`;
    return page(
      req,
      rows,
      rows.map((e) => ({
        id: e.id,
        name: e.name,
        owner: userBasic(e.owner),
        description: e.description,
        tags: e.tags,
        created_at: iso(e.created_at),
        updated_at: iso(e.updated_at),
        updated_by: userBasic(e.updated_by),
        last_seen_at: iso(e.last_seen_at),
        last_updated_at: iso(e.last_seen_at && e.last_seen_at > e.updated_at ? e.last_seen_at : e.updated_at),
        verified: e.verified,
        verified_at: iso(e.verified_at),
        verified_by: userBasic(e.verified_by),
        hidden: e.hidden,
        is_action: false,
        action_id: null,
        is_calculating: false,
        last_calculated_at: null,
        created_by: null,
        post_to_slack: false,
        default_columns: [],
        volume_30_day: null,
        query_usage_30_day: null,
      })),
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
    if ((await projectLevel(project, user)) === undefined) return notFound(reply);
    const rows = await sql`select id, uuid, event, distinct_id, properties, timestamp, elements_chain,
      to_char(timestamp at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as ts_text
    from events where project_id = ${project} order by timestamp desc nulls last, id desc nulls last limit 101`;
    let next: string | null = null;
    if (rows.length > 100) {
      const last = rows[99]!;
      const u = new URL(req.url, `${req.protocol}://${req.host}`);
      u.searchParams.set('before', last.ts_text);
      u.searchParams.set('cursor', Buffer.from(JSON.stringify(Number(last.id))).toString('base64url'));
      next = u.toString();
    }
    const results = rows.slice(0, 100).map((e) => ({
      id: e.uuid,
      distinct_id: e.distinct_id,
      properties: e.properties,
      event: e.event,
      timestamp: iso(e.timestamp),
      person: null,
      elements: chainToElements(e.elements_chain),
      elements_chain: e.elements_chain,
    }));
    return { next, results };
  },
);

await app.listen({ host: '127.0.0.1', port: Number(port) });
process.stdout.write('ready\n');
