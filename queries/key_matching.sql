-- count_processing_keys_matching --
-- How many keys of the needs_review or processing tab match every filter, counted up to cap + 1 rows.
SELECT count(*)::integer AS count
FROM (SELECT 1 FROM {keys} k WHERE {processing_key_filter} LIMIT %(cap)s + 1) m

-- count_stuck_keys_matching --
-- How many stuck keys match the filters (no suggested outcome), counted up to cap + 1 rows from the two index ranges that hold them (stuck_keys_unleased, stuck_keys_leased), never an OR that no index can use.
SELECT count(*)::integer AS count
FROM ((SELECT 1 FROM {keys} k WHERE {stuck_keys_unleased} LIMIT %(cap)s + 1)
      UNION ALL
      (SELECT 1 FROM {keys} k WHERE {stuck_keys_leased} LIMIT %(cap)s + 1)
      LIMIT %(cap)s + 1) m

-- count_status_keys_matching --
-- How many keys of a terminal or failed tab match every filter, counted up to cap + 1 rows.
SELECT count(*)::integer AS count
FROM (SELECT 1 FROM {keys} k WHERE {status_key_filter} LIMIT %(cap)s + 1) m

-- count_suggestions_on_page --
-- The stuck keys shown on one page of the list, per suggested outcome: each key's attempts and expiry as the page read them, and one outbox probe each; never a key the page does not show.
SELECT s.suggested, count(*)::integer AS keys
FROM (SELECT {suggested_outcome} AS suggested
      FROM unnest(%(scopes)s::text[], %(keys)s::text[], %(attempts)s::integer[], %(expires)s::timestamptz[])
           AS k(idempotency_scope, idempotency_key, attempt_count, expires_at)) s
GROUP BY s.suggested

-- stuck_keys_unleased --
-- Stuck keys without a lease (claimed more than the default lease ago) that match the operator's filters and overdue: a range of index_keys_unleased.
k.status = 'processing' AND k.locked_until IS NULL
  AND k.claimed_at < now() - make_interval(secs => %(lease_seconds)s)
  AND (%(min_overdue)s::double precision IS NULL
       OR k.claimed_at + make_interval(secs => %(lease_seconds)s)
          <= now() - make_interval(secs => %(min_overdue)s::double precision))
  AND {key_operator_filter}

-- stuck_keys_leased --
-- Stuck keys whose lease has ended that match the operator's filters and overdue: one range of index_keys_leases (lease end before now, or before now minus overdue).
k.status = 'processing' AND k.locked_until < now()
  AND (%(min_overdue)s::double precision IS NULL
       OR k.locked_until <= now() - make_interval(secs => %(min_overdue)s::double precision))
  AND {key_operator_filter}
