-- count_processing_keys_matching --
-- How many keys of a processing tab (stuck, needs_review, processing) match every filter, counted up to cap + 1 rows.
SELECT count(*)::integer AS count
FROM (SELECT 1 FROM {keys} k WHERE {processing_key_filter} LIMIT %(cap)s + 1) m

-- count_status_keys_matching --
-- How many keys of a terminal or failed tab match every filter, counted up to cap + 1 rows.
SELECT count(*)::integer AS count
FROM (SELECT 1 FROM {keys} k WHERE {status_key_filter} LIMIT %(cap)s + 1) m

-- count_stuck_keys_by_suggestion --
-- The stuck keys that match the filters, grouped by the outcome suggested for each and how many have an outbox row (at most cap keys read, most overdue first).
SELECT s.suggested, count(*)::integer AS keys
FROM (SELECT {suggested_outcome} AS suggested
      FROM {keys} k
      WHERE {processing_key_filter}
      ORDER BY k.locked_until NULLS FIRST
      LIMIT %(cap)s) s
GROUP BY s.suggested
