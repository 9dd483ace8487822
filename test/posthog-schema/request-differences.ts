// Where a request PostHog's published schema admits is one this contract refuses, and why that is right:
// either the schema is a generator artifact (PostHog's own code refuses the same requests, the schema does
// not say so; see the README beside the schema copy) or a deliberate difference, written down. Each entry
// names the operations and the difference as posthog-schema-requests.test.ts words it.

export interface Difference {
  ops: RegExp;
  gap: RegExp;
  reason: string;
}

const BODY_WRITES =
  /^(dashboards|insights|property_definitions|organizations|(projects_)?batch_exports)_(create|update|partial_update)$/;

/** Generator artifacts: PostHog refuses these too, its schema does not say so. */
export const REQUEST_ARTIFACTS: readonly Difference[] = [
  {
    ops: BODY_WRITES,
    gap: /^body name: minLength 1 \(PostHog: none\)$/,
    reason:
      'a model CharField/TextField without blank=True becomes a serializer field that refuses "" ("This field ' +
      'may not be blank."); drf-spectacular publishes no minLength for it',
  },
  {
    ops: /^domains_create$/,
    gap: /^body domain: pattern /,
    reason: 'validate_domain refuses the same names with the same expression ("Please enter a valid domain ...")',
  },
  {
    ops: /^users_(update|partial_update)$/,
    gap: /^body notification_settings: closed/,
    reason:
      'validate_notification_settings refuses any key it does not know ("Key <key> is not valid as a key for ' +
      'notification settings"); the field is published as an open dictionary',
  },
  {
    ops: /^invites_bulk_create$/,
    gap: /^body: (type array \(PostHog: object\)|maxItems 20 \(PostHog: none\))$/,
    reason:
      'a custom action published with the model serializer as its body; PostHog reads a list of at most 20 ' +
      'invites ("A maximum of 20 invites can be sent in a single request.")',
  },
  {
    ops: /^persons_bulk_delete_create$/,
    gap: /^\?(ids|distinct_ids): type array \(PostHog: object\)$/,
    reason: 'OpenApiParameter typed OBJECT for what person.py reads as a list (`request.GET.getlist`)',
  },
];

/** Deliberate: this server refuses what PostHog takes, for the reason given. */
export const REQUEST_DEVIATIONS: readonly Difference[] = [
  {
    ops: /^(dashboards|insights|property_definitions)_(create|update|partial_update)$/,
    gap: /^body tags\.\*: maxLength 255 \(PostHog: none\)$/,
    reason: "PostHog's Tag.name is varchar(255): a longer tag fails in its database (a 500); a 400 here",
  },
  {
    ops: /^dashboards_(create|update|partial_update)$/,
    gap: /^body data_color_theme_id: (minimum 1|maximum 2147483647) \(PostHog: none\)$/,
    reason:
      'a foreign key: PostHog takes only an existing theme (ids from 1, an integer column) or null; a value no ' +
      'theme can have fails in its database',
  },
  {
    ops: /^query_create$/,
    gap: /^body client_query_id: maxLength 200 \(PostHog: none\)$/,
    reason:
      'the id is the key of a PostgreSQL index here (PostHog keeps it in Redis); 200 characters keep it far ' +
      "under the index's row limit",
  },
  {
    ops: /^hog_functions_(create|update|partial_update)$/,
    gap: /^body type: null \(PostHog takes it\)$/,
    reason:
      'PostHog stores a function of no type, which none of its consumers runs; here a type that does not run ' +
      'is refused (400 on `type`), as for the types PostHog lists that do not run here',
  },
  {
    ops: /^(projects_)?batch_exports_(create|update|partial_update|run_test_step_create|run_test_step_new_create)$/,
    gap: /^body destination\.type: PostHog also takes Snowflake, Redshift, BigQuery, Databricks$/,
    reason:
      'destinations this server does not deliver to (their warehouses and SDKs are not shipped): an export ' +
      'that could never run is refused at once, `"Snowflake" is not a valid choice.` on destination__type',
  },
  {
    ops: /^hog_functions_(create|update|partial_update)$/,
    gap: /^body inputs_schema\.\*\.type: PostHog also takes native_email$/,
    reason:
      "the input of PostHog's own e-mail sending (its messaging product's hidden template); this server sends " +
      'no e-mail from functions, so an input of that type is refused',
  },
  {
    ops: /^hog_functions_(create|update|partial_update)$/,
    gap: /^body mappings: maxItems 100 \(PostHog: none\)$/,
    reason:
      "each mapping's filters run on every ingested event of the project; 100 bound the work one tenant's " +
      "destination adds to ingestion (PostHog's templates use a handful)",
  },
];

/** The entry that allows `gap` of `op`, or undefined. */
export function requestDifference(op: string, gap: string): Difference | undefined {
  return [...REQUEST_ARTIFACTS, ...REQUEST_DEVIATIONS].find((d) => d.ops.test(op) && d.gap.test(gap));
}
