-- A project's timezone rides on the principal (src/auth/queries.ts loadPrincipal): the Query API, the events
-- listing and insights read it from the request's project instead of querying for it. A change of it clears
-- the auth caches like a change of access does (drizzle/0019_access_changes.sql), so the next query of any
-- process cuts its days in the new zone. Only a real change: a PATCH that writes the same zone back clears nothing.
CREATE TRIGGER projects_timezone_changed
  AFTER UPDATE OF timezone ON projects
  FOR EACH ROW WHEN (OLD.timezone IS DISTINCT FROM NEW.timezone) EXECUTE FUNCTION access_changed();
