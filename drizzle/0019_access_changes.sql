-- Who may do what is read from these tables (src/auth/queries.ts loadPrincipal) and cached in every
-- server process. A write that changes it marks its transaction (posthog.access_changed, read by the
-- client before COMMIT so the writer waits until every process has cleared its cache) and notifies the
-- processes' LISTEN connections on commit, whatever code made it: a workflow cannot forget it, and a
-- write outside any workflow (an operator's SQL) is covered too. Columns that do not feed a principal
-- (a key's last_used_at, touched on every request; organization member counts; project settings) are left out.
CREATE FUNCTION access_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('posthog.access_changed', 'on', true);
  PERFORM pg_notify('auth_cache_invalidate', '');
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER personal_api_keys_access_changed
  AFTER DELETE OR UPDATE OF secure_value, scopes, scoped_teams, scoped_organizations, user_id ON personal_api_keys
  FOR EACH ROW EXECUTE FUNCTION access_changed();
--> statement-breakpoint
CREATE TRIGGER users_access_changed AFTER DELETE OR UPDATE ON users FOR EACH ROW EXECUTE FUNCTION access_changed();
--> statement-breakpoint
CREATE TRIGGER organization_memberships_access_changed
  AFTER INSERT OR DELETE OR UPDATE OF level, user_id, organization_id ON organization_memberships
  FOR EACH ROW EXECUTE FUNCTION access_changed();
--> statement-breakpoint
CREATE TRIGGER organizations_access_changed
  AFTER DELETE OR UPDATE OF name, members_can_use_personal_api_keys ON organizations
  FOR EACH ROW EXECUTE FUNCTION access_changed();
--> statement-breakpoint
CREATE TRIGGER projects_access_changed
  AFTER INSERT OR DELETE OR UPDATE OF organization_id ON projects
  FOR EACH ROW EXECUTE FUNCTION access_changed();
