-- Property filters compare stored JSON text as dates; a value that is not one must not fail the
-- query, and one without an offset is read as UTC whatever the session's time zone.
CREATE OR REPLACE FUNCTION try_timestamptz(value text) RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE SET timezone TO 'UTC' AS $$
BEGIN
  RETURN value::timestamptz;
EXCEPTION WHEN others THEN
  RETURN NULL;
END;
$$;
