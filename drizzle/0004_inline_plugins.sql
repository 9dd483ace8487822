-- The inline plugins that ship with the server: global transformations that belong to no organization.
INSERT INTO "plugins" ("organization_id", "plugin_type", "is_global", "name", "description", "url", "config_schema", "tag", "capabilities")
VALUES
  (NULL, 'inline', true, 'posthog-semver-flattener',
   'Splits semantic version strings in the listed properties into major, minor, patch, pre-release and build parts.',
   'inline://semver-flattener',
   '[{"key": "properties", "name": "Comma-separated properties holding a version", "type": "string", "default": "", "required": true}]'::jsonb,
   'semver-flattener', '{"methods": ["processEvent"]}'::jsonb),
  (NULL, 'inline', true, 'User Agent Populator',
   'Adds browser, browser version, OS and device details parsed from the event''s user agent.',
   'inline://user-agent',
   '[{"key": "overrideUserAgentDetails", "name": "Override browser properties already on the event?", "type": "string", "default": "false", "required": false}]'::jsonb,
   'user-agent', '{"methods": ["processEvent"]}'::jsonb);
