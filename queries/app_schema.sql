-- create_app_schema_only --
-- The application schema of the reference tables, if absent.
CREATE SCHEMA IF NOT EXISTS {schema}

-- create_app_status_enum --
-- The reference schema's status enum (only with --status-type enum); a no-op when it exists.
DO $$
BEGIN
    CREATE TYPE {status_enum} AS ENUM ('processing', 'succeeded', 'failed_retryable', 'failed_final');
EXCEPTION WHEN duplicate_object THEN
    NULL;
END
$$

-- create_app_tables --
-- The three application tables of the README's column contract (docs/reference-schema.md), if absent.
CREATE TABLE IF NOT EXISTS {keys} (
    idempotency_scope text NOT NULL,
    idempotency_key text NOT NULL,
    request_hash text NOT NULL,
    status {status_type} NOT NULL,
    result_ref_type text,
    result_ref_id uuid,
    response_body jsonb,
    failure_code text,
    failure_message text,
    claimed_by text,
    claimed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    locked_until timestamptz,
    attempt_count integer NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (idempotency_scope, idempotency_key),
    CHECK (idempotency_scope <> ''),
    CHECK (idempotency_key <> ''),
    CHECK (request_hash <> ''),
    CHECK (attempt_count >= 1),
    CHECK (expires_at > created_at),
    CHECK (status::text IN ('processing', 'succeeded', 'failed_retryable', 'failed_final'))
);

CREATE TABLE IF NOT EXISTS {inbox} (
    consumer_name text NOT NULL,
    message_id text NOT NULL,
    message_hash text NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    result_ref_type text,
    result_ref_id uuid,
    PRIMARY KEY (consumer_name, message_id)
);

CREATE TABLE IF NOT EXISTS {outbox} (
    outbox_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    event_type text NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id uuid NOT NULL,
    idempotency_scope text NOT NULL,
    idempotency_key text NOT NULL,
    payload jsonb NOT NULL,
    status text NOT NULL DEFAULT 'pending',
    attempt_count integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    published_at timestamptz,
    UNIQUE (idempotency_scope, idempotency_key, event_type)
)

-- create_app_functions --
-- Reference claim / complete / fail / consume functions over the configured tables.
CREATE OR REPLACE FUNCTION {schema}.claim_idempotency_key(
    p_scope text,
    p_key text,
    p_request_hash text,
    p_claimed_by text,
    p_lock_seconds integer DEFAULT 300,
    p_retention interval DEFAULT interval '24 hours',
    OUT claim_kind text,
    OUT attempt_count integer,
    OUT response_body jsonb,
    OUT result_ref_type text,
    OUT result_ref_id uuid,
    OUT failure_code text,
    OUT failure_message text
)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
-- Outcomes: new_claim, replay_success, in_progress, stale_reclaim,
-- retry_reclaim, final_failure. A different request under the same key is
-- rejected with SQLSTATE P4002. The caller runs the work only for new_claim,
-- stale_reclaim and retry_reclaim, and passes the returned attempt_count to
-- complete/fail as a fencing token.
DECLARE
    v_inserted integer;
    v_row {keys}%ROWTYPE;
    v_now timestamptz := clock_timestamp();
    v_lease interval := make_interval(secs => p_lock_seconds);
BEGIN
    IF p_scope IS NULL OR btrim(p_scope) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'P4000', MESSAGE = 'idempotency scope is required';
    END IF;
    IF p_key IS NULL OR p_key = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'P4001', MESSAGE = 'idempotency key is required';
    END IF;
    IF p_request_hash IS NULL OR btrim(p_request_hash) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'P4003', MESSAGE = 'request hash is required';
    END IF;

    LOOP
        -- The primary key decides who creates the row; a concurrent inserter
        -- waits here for the winner's transaction and then does nothing.
        INSERT INTO {keys} AS ir (idempotency_scope, idempotency_key, request_hash, status,
                                  claimed_by, claimed_at, locked_until, created_at, updated_at, expires_at)
        VALUES (p_scope, p_key, p_request_hash, 'processing',
                p_claimed_by, v_now, v_now + v_lease, v_now, v_now, v_now + p_retention)
        ON CONFLICT (idempotency_scope, idempotency_key) DO NOTHING;
        GET DIAGNOSTICS v_inserted = ROW_COUNT;

        IF v_inserted = 1 THEN
            claim_kind := 'new_claim';
            attempt_count := 1;
            RETURN;
        END IF;

        -- The row lock serialises everyone else's inspection of the existing row.
        SELECT * INTO v_row
        FROM {keys} ir
        WHERE ir.idempotency_scope = p_scope AND ir.idempotency_key = p_key
        FOR UPDATE;
        EXIT WHEN FOUND;
        -- Gone between the two statements: a retention purge deleted the expired
        -- row the INSERT collided with. The key is new again: insert once more.
    END LOOP;

    IF v_row.request_hash IS DISTINCT FROM p_request_hash THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P4002',
            MESSAGE = 'idempotency key reused with a different request payload',
            DETAIL = format('scope=%s key=%s', p_scope, p_key),
            HINT = 'Reuse an idempotency key only for the same logical command.';
    END IF;

    attempt_count := v_row.attempt_count;
    result_ref_type := v_row.result_ref_type;
    result_ref_id := v_row.result_ref_id;

    IF v_row.status::text = 'succeeded' THEN
        claim_kind := 'replay_success';
        response_body := v_row.response_body;
        RETURN;
    END IF;

    IF v_row.status::text = 'failed_final' THEN
        claim_kind := 'final_failure';
        failure_code := v_row.failure_code;
        failure_message := v_row.failure_message;
        RETURN;
    END IF;

    IF v_row.status::text = 'processing'
       AND (v_row.locked_until > v_now
            OR (v_row.locked_until IS NULL AND v_row.claimed_at > v_now - v_lease)) THEN
        claim_kind := 'in_progress';
        RETURN;
    END IF;

    -- failed_retryable, or processing whose lease ran out: take it over.
    IF v_row.status::text = 'failed_retryable' THEN
        claim_kind := 'retry_reclaim';
    ELSE
        claim_kind := 'stale_reclaim';
    END IF;

    UPDATE {keys} ir
    SET status = 'processing',
        attempt_count = ir.attempt_count + 1,
        claimed_by = p_claimed_by,
        claimed_at = v_now,
        locked_until = v_now + v_lease,
        updated_at = v_now,
        -- a retry restarts the replay horizon, so the key outlives the late retries
        expires_at = greatest(ir.expires_at, v_now + p_retention)
    WHERE ir.idempotency_scope = p_scope AND ir.idempotency_key = p_key
    RETURNING ir.attempt_count INTO attempt_count;
END;
$$;

CREATE OR REPLACE FUNCTION {schema}.complete_idempotency_key(
    p_scope text,
    p_key text,
    p_result_ref_type text,
    p_result_ref_id uuid,
    p_response_body jsonb,
    p_attempt integer DEFAULT NULL
)
RETURNS void
LANGUAGE plpgsql
AS $$
-- p_attempt is the fencing token from the claim: a worker whose lease was
-- taken over (stale re-claim, or an operator's reclassification) fails here
-- instead of overwriting the newer owner's row.
BEGIN
    UPDATE {keys} ir
    SET status = 'succeeded',
        result_ref_type = p_result_ref_type,
        result_ref_id = p_result_ref_id,
        response_body = p_response_body,
        failure_code = NULL,
        failure_message = NULL,
        locked_until = NULL,
        updated_at = clock_timestamp()
    WHERE ir.idempotency_scope = p_scope
      AND ir.idempotency_key = p_key
      AND ir.status::text = 'processing'
      AND (p_attempt IS NULL OR ir.attempt_count = p_attempt);
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P4010',
            MESSAGE = 'idempotency key is not processing under this attempt',
            DETAIL = format('scope=%s key=%s attempt=%s', p_scope, p_key, p_attempt);
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION {schema}.fail_idempotency_key(
    p_scope text,
    p_key text,
    p_retryable boolean,
    p_failure_code text,
    p_failure_message text,
    p_attempt integer DEFAULT NULL
)
RETURNS void
LANGUAGE plpgsql
AS $$
-- Two statements rather than a CASE so this works whether status is an enum
-- or plain text (a text CASE result does not assign to an enum column).
BEGIN
    IF p_retryable THEN
        UPDATE {keys} ir
        SET status = 'failed_retryable', failure_code = p_failure_code, failure_message = p_failure_message,
            locked_until = NULL, updated_at = clock_timestamp()
        WHERE ir.idempotency_scope = p_scope AND ir.idempotency_key = p_key
          AND ir.status::text = 'processing' AND (p_attempt IS NULL OR ir.attempt_count = p_attempt);
    ELSE
        UPDATE {keys} ir
        SET status = 'failed_final', failure_code = p_failure_code, failure_message = p_failure_message,
            locked_until = NULL, updated_at = clock_timestamp()
        WHERE ir.idempotency_scope = p_scope AND ir.idempotency_key = p_key
          AND ir.status::text = 'processing' AND (p_attempt IS NULL OR ir.attempt_count = p_attempt);
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'P4011',
            MESSAGE = 'idempotency key is not processing under this attempt',
            DETAIL = format('scope=%s key=%s attempt=%s', p_scope, p_key, p_attempt);
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION {schema}.consume_message_once(
    p_consumer text,
    p_message_id text,
    p_message_hash text,
    p_result_ref_type text DEFAULT NULL,
    p_result_ref_id uuid DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
AS $$
-- 'processed' the first time, 'duplicate_ignored' for a redelivery of the
-- same message; the same id with another payload is rejected (P4050).
DECLARE
    v_inserted integer;
    v_hash text;
BEGIN
    LOOP
        INSERT INTO {inbox} (consumer_name, message_id, message_hash, result_ref_type, result_ref_id)
        VALUES (p_consumer, p_message_id, p_message_hash, p_result_ref_type, p_result_ref_id)
        ON CONFLICT (consumer_name, message_id) DO NOTHING;
        GET DIAGNOSTICS v_inserted = ROW_COUNT;
        IF v_inserted = 1 THEN
            RETURN 'processed';
        END IF;
        SELECT pm.message_hash INTO v_hash
        FROM {inbox} pm
        WHERE pm.consumer_name = p_consumer AND pm.message_id = p_message_id;
        EXIT WHEN FOUND;
        -- Gone between the two statements: a retention purge deleted the row the
        -- INSERT collided with, so the message is new again: insert once more.
    END LOOP;
    IF v_hash = p_message_hash THEN
        RETURN 'duplicate_ignored';
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = 'P4050',
        MESSAGE = 'message id reused with a different payload',
        DETAIL = format('consumer=%s message_id=%s', p_consumer, p_message_id);
END;
$$

-- claim_key --
-- Claim an idempotency key through the reference function.
SELECT * FROM {schema}.claim_idempotency_key(
    %(scope)s, %(key)s, %(request_hash)s, %(claimed_by)s, %(lock_seconds)s, %(retention)s)

-- complete_key --
-- Mark a claimed key succeeded through the reference function (fenced by attempt).
SELECT {schema}.complete_idempotency_key(
    %(scope)s, %(key)s, %(result_ref_type)s, %(result_ref_id)s, %(response_body)s, %(attempt)s)

-- fail_key --
-- Mark a claimed key failed (retryable or final) through the reference function.
SELECT {schema}.fail_idempotency_key(
    %(scope)s, %(key)s, %(retryable)s, %(failure_code)s, %(failure_message)s, %(attempt)s)

-- consume_message --
-- Record an inbound message once through the reference function.
SELECT {schema}.consume_message_once(
    %(consumer)s, %(message_id)s, %(message_hash)s, %(result_ref_type)s, %(result_ref_id)s) AS outcome

-- create_app_partitioned_tables --
-- The inbox and outbox of the reference schema range-partitioned by day (init-app-schema --partitioned), if absent; the keys table stays whole (a claim needs one unique key over all of it).
-- A partitioned table's unique keys must contain the partition column, so uniqueness of (consumer_name, message_id) and of (scope, key, event_type) holds within a partition only: create_time_partitions gives every partition its own unique index.
CREATE TABLE IF NOT EXISTS {inbox} (
    consumer_name text NOT NULL,
    message_id text NOT NULL,
    message_hash text NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    result_ref_type text,
    result_ref_id uuid,
    PRIMARY KEY (consumer_name, message_id, processed_at)
) PARTITION BY RANGE (processed_at);

CREATE TABLE IF NOT EXISTS {outbox} (
    outbox_id uuid NOT NULL DEFAULT gen_random_uuid(),
    event_type text NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id uuid NOT NULL,
    idempotency_scope text NOT NULL,
    idempotency_key text NOT NULL,
    payload jsonb NOT NULL,
    status text NOT NULL DEFAULT 'pending',
    attempt_count integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    published_at timestamptz,
    PRIMARY KEY (outbox_id, created_at)
) PARTITION BY RANGE (created_at)

-- create_app_partition_functions --
-- The partitioned reference schema's functions: daily partitions made ahead of time, and consume_message_once looking in every partition before it inserts.
CREATE OR REPLACE FUNCTION {schema}.create_time_partitions(
    p_table regclass,
    p_from timestamptz,
    p_to timestamptz,
    p_unique_columns text[]
)
RETURNS integer
LANGUAGE plpgsql
AS $$
-- One partition per UTC day from p_from up to p_to that no partition covers yet, named <table>_pYYYYMMDD, each
-- with a unique index on p_unique_columns (the deduplication that holds within one partition). Returns how many
-- it created; a day another partition already covers is left alone.
DECLARE
    v_schema text;
    v_table text;
    v_day timestamptz := date_trunc('day', p_from AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    v_name text;
    v_columns text;
    v_created integer := 0;
BEGIN
    SELECT n.nspname, c.relname INTO v_schema, v_table
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = p_table;
    SELECT string_agg(quote_ident(col), ', ') INTO v_columns FROM unnest(p_unique_columns) AS col;
    WHILE v_day < p_to LOOP
        v_name := left(v_table, 53) || '_p' || to_char(v_day AT TIME ZONE 'UTC', 'YYYYMMDD');
        IF to_regclass(format('%I.%I', v_schema, v_name)) IS NULL THEN
            BEGIN
                EXECUTE format('CREATE TABLE %I.%I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
                               v_schema, v_name, p_table, v_day, v_day + interval '1 day');
                EXECUTE format('CREATE UNIQUE INDEX ON %I.%I (%s)', v_schema, v_name, v_columns);
                v_created := v_created + 1;
            EXCEPTION WHEN invalid_object_definition THEN
                NULL;  -- another partition covers (part of) this day
            END;
        END IF;
        v_day := v_day + interval '1 day';
    END LOOP;
    RETURN v_created;
END;
$$;

CREATE OR REPLACE FUNCTION {schema}.consume_message_once(
    p_consumer text,
    p_message_id text,
    p_message_hash text,
    p_result_ref_type text DEFAULT NULL,
    p_result_ref_id uuid DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
AS $$
-- 'processed' the first time, 'duplicate_ignored' for a redelivery of the same message; the same id with
-- another payload is rejected (P4050). The inbox is partitioned and its unique index holds within one
-- partition, so this looks in every partition first; only two deliveries racing on either side of a partition
-- boundary both count as new (what partitioning costs: docs/concepts.md, Retention shorter than the replay horizon).
DECLARE
    v_inserted integer;
    v_hash text;
BEGIN
    LOOP
        SELECT pm.message_hash INTO v_hash
        FROM {inbox} pm
        WHERE pm.consumer_name = p_consumer AND pm.message_id = p_message_id
        LIMIT 1;
        EXIT WHEN FOUND;
        -- no conflict target: the partition's own unique index on (consumer_name, message_id) decides
        INSERT INTO {inbox} (consumer_name, message_id, message_hash, result_ref_type, result_ref_id)
        VALUES (p_consumer, p_message_id, p_message_hash, p_result_ref_type, p_result_ref_id)
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS v_inserted = ROW_COUNT;
        IF v_inserted = 1 THEN
            RETURN 'processed';
        END IF;
        -- a concurrent delivery of the same message won in this partition: read its row
    END LOOP;
    IF v_hash = p_message_hash THEN
        RETURN 'duplicate_ignored';
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = 'P4050',
        MESSAGE = 'message id reused with a different payload',
        DETAIL = format('consumer=%s message_id=%s', p_consumer, p_message_id);
END;
$$

-- create_time_partitions --
-- Make the daily partitions of one partitioned reference table that are missing between two times (returns how many).
SELECT {schema}.create_time_partitions(%(table)s::regclass, %(from)s, %(to)s, %(unique_columns)s::text[]) AS created

-- get_partition_function --
-- Whether the application schema has the reference schema's create_time_partitions (init-app-schema --partitioned made it).
SELECT to_regprocedure(%(signature)s) IS NOT NULL AS present

-- fix_create_time_partitions --
-- The call that makes the next week's daily partitions of a partitioned reference table now (shown, never run by idemdash).
SELECT {schema}.create_time_partitions({table}, now(), now() + interval '7 days', {unique_columns})
