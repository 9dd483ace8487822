-- The Query API's answer-size cap, checked by PostgreSQL as it produces each row: a query's rows are
-- read in one execution (a cursor's fetches would forbid parallel plans), so the statement itself must
-- stop at the cap. The running total of the answer's bytes is passed in; past the cap the statement
-- fails with SQLSTATE PH413, which the server answers as PostHog's too_many_rows_or_bytes 400.
CREATE OR REPLACE FUNCTION query_answer_within(total bigint, cap bigint) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  IF total > cap THEN
    RAISE EXCEPTION 'the answer is larger than % bytes', cap USING ERRCODE = 'PH413';
  END IF;
  RETURN true;
END
$$;
