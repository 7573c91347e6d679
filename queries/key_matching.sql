-- count_suggested_keys_matching --
-- How many stuck keys match every filter and the suggested outcome asked for, counted up to cap + 1 rows (a page's worth: each key left by its own columns costs an outbox lookup).
SELECT count(*)::integer AS count
FROM (SELECT 1 FROM {keys} k WHERE {processing_key_filter} LIMIT %(cap)s + 1) m

-- count_suggestions_on_page --
-- The stuck keys shown on one page of the list, per suggested outcome: each key's attempts and expiry as the page read them, and one outbox probe each; never a key the page does not show.
SELECT s.suggested, count(*)::integer AS keys
FROM (SELECT {suggested_outcome} AS suggested
      FROM unnest(%(scopes)s::text[], %(keys)s::text[], %(attempts)s::integer[], %(expires)s::timestamptz[])
           AS k(idempotency_scope, idempotency_key, attempt_count, expires_at)) s
GROUP BY s.suggested

-- stuck_range_unleased --
-- Stuck keys without a lease (claimed more than the default lease ago), overdue as asked: the range of index_keys_unleased_filters, before the operator's filters.
k.status = 'processing' AND k.locked_until IS NULL
  AND k.claimed_at < now() - make_interval(secs => %(lease_seconds)s)
  AND (%(min_overdue)s::double precision IS NULL
       OR k.claimed_at + make_interval(secs => %(lease_seconds)s)
          <= now() - make_interval(secs => %(min_overdue)s::double precision))

-- stuck_range_leased --
-- Stuck keys whose lease has ended, overdue as asked: the range of index_keys_leases (lease end before now, or before now minus overdue), before the operator's filters.
k.status = 'processing' AND k.locked_until < now()
  AND (%(min_overdue)s::double precision IS NULL
       OR k.locked_until <= now() - make_interval(secs => %(min_overdue)s::double precision))
