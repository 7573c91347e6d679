-- profile_time_timestamptz --
-- A library's timestamptz column ({time}) as a point in time.
({time})

-- profile_time_utc --
-- A library's timestamp column written from a UTC clock ({time}) as a point in time.
({time} AT TIME ZONE 'UTC')

-- profile_time_local --
-- A library's timestamp column written from its host's wall clock ({time}), that clock's zone in %(library_zone)s (LIBRARY_TIMEZONE), as a point in time.
({time} AT TIME ZONE %(library_zone)s)

-- profile_time_epoch_ms --
-- A library's epoch-milliseconds column ({time}) as a point in time.
to_timestamp({time}::float8 / 1000)

-- profile_no_time --
-- Where a library's table records no time of a row's last change: no point in time.
NULL::timestamptz

-- profile_no_value --
-- Where a library's table records no such column (a group, an owner): no value.
NULL::text

-- profile_owner_value --
-- A library row's owner ({owner}) as text; NULL for a value that means no owner (%(unowned)s: Wolverine's 0, any node).
CASE WHEN ({owner})::text = ANY(%(unowned)s::text[]) THEN NULL ELSE ({owner})::text END

-- profile_everything --
-- A condition that holds for every row: a state the library does not record, a window over a table without a time of change.
true

-- profile_within_window --
-- Rows whose last change ({time}: the table's change time, as a point in time) is within the window (%(window)s).
{time} >= now() - %(window)s::interval

-- list_profile_attempt_rows --
-- The rows of a library's table attempted at least %(min_attempts)s times ({attempts}), changed within the window ({window}), most attempts first, then by identity ({identity_value}); at most %(limit)s. Each with its group ({group_value}: a JSON array of its group columns, or null), its owner ({owner_value}, as text, or null) and whether it is stuck ({stuck}: the library's stuck condition, or false where it records none).
SELECT ({identity_value})::text AS identity, ({attempts})::bigint AS attempts, {group_value} AS group_values,
       ({owner_value})::text AS owner, coalesce(({stuck}), false) AS stuck
FROM {table} t
WHERE {attempts} >= %(min_attempts)s AND ({window})
ORDER BY {attempts} DESC, ({identity_value})::text
LIMIT %(limit)s

-- list_profile_attempt_groups --
-- The rows of a library's table attempted at least %(min_attempts)s times ({attempts}), changed within the window ({window}), grouped by {group_value} (a JSON array of its group columns, or its owner column as text): per group the rows, the stuck ones ({stuck}: the library's stuck condition) and the most attempts; the most rows first; at most %(limit)s groups.
SELECT g.group_values, g.rows, g.stuck, g.max_attempts FROM (
    SELECT ({group_value})::jsonb AS group_values, count(*) AS rows,
           count(*) FILTER (WHERE coalesce(({stuck}), false)) AS stuck, max({attempts})::bigint AS max_attempts
    FROM {table} t
    WHERE {attempts} >= %(min_attempts)s AND ({window})
    GROUP BY 1
) g
ORDER BY g.rows DESC, g.max_attempts DESC, g.group_values::text
LIMIT %(limit)s

-- list_profile_owner_counts --
-- The rows of a library's table in one of its states ({condition}), changed within the window ({window}), counted per owner ({owner}, as text; the values of %(unowned)s mean no owner and are left out), with the latest change among them ({changed}: the table's change time, or null where it records none); at most %(limit)s owners, the most rows first.
SELECT ({owner})::text AS name, count(*) AS rows, max({changed}) AS last_seen
FROM {table} t
WHERE {owner} IS NOT NULL AND ({owner})::text <> ALL(%(unowned)s::text[]) AND ({condition}) AND ({window})
GROUP BY 1
ORDER BY count(*) DESC, 1
LIMIT %(limit)s

-- list_profile_stuck_cells --
-- The stuck rows of a library's table ({condition}: its stuck state), counted per group ({group_value}: a JSON array of its group columns, or null) and per owner ({owner_value}, as text, or null), over at most %(cap)s + 1 of them (a total over cap: too many to break down).
WITH examined AS MATERIALIZED (
    SELECT ({group_value})::jsonb AS group_values, ({owner_value})::text AS owner FROM {table} t
    WHERE {condition} LIMIT %(cap)s + 1
)
SELECT 'group' AS dimension, e.group_values::text AS name, count(*)::integer AS count FROM examined e GROUP BY e.group_values
UNION ALL
SELECT 'owner' AS dimension, e.owner AS name, count(*)::integer AS count FROM examined e GROUP BY e.owner
